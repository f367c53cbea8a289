package core

import (
	"context"
	"testing"

	"github.com/xfsq/xfsq/settings"
)

// WriteSettings, read in one query, are each setting as Setting reads it,
// stored or default.
func TestWriteSettingsAreEachSettingAsRead(t *testing.T) {
	ctx := context.Background()
	m, _ := managerWithOmni(t, t.TempDir())
	for key, val := range map[string]string{"max_file_bytes": "3M", "root_budget": "5G", "reservation_ttl": "7m"} {
		if _, _, err := m.SetSetting(ctx, key, val); err != nil {
			t.Fatal(err)
		}
	}
	got, err := m.WriteSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	read := func(key string) settings.Value {
		v, err := m.Setting(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	want := WriteSettings{MaxFileBytes: read("max_file_bytes").Bytes(), RootBudget: read("root_budget").Bytes(),
		TTL: read("reservation_ttl").Duration(), SoftGrace: read("soft_grace").Duration()}
	if got != want || got.MaxFileBytes == got.RootBudget || got.TTL == got.SoftGrace || got.SoftGrace == 0 {
		t.Errorf("write settings %+v, want %+v", got, want)
	}
}
