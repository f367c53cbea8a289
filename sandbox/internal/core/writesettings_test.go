package core

import (
	"context"
	"testing"

	"github.com/xfsq/xfsq/settings"
	"github.com/xfsq/xfsq/store"
)

// storeSetting stores a setting's value as set would, without the
// journal record (the change of a setting is the settingwrites use case's,
// above the core).
func storeSetting(t *testing.T, m *Manager, key, value string) {
	t.Helper()
	s, err := settings.Lookup(key)
	if err != nil {
		t.Fatal(err)
	}
	norm, err := s.NormalizeExplicit(value, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Store.InTx(context.Background(), func(tx *store.Tx) error { _, err := tx.SetSetting(context.Background(), key, norm); return err }); err != nil {
		t.Fatal(err)
	}
}

// WriteSettings, read in one query, are each setting as Setting reads it,
// stored or default.
func TestWriteSettingsAreEachSettingAsRead(t *testing.T) {
	ctx := context.Background()
	m, _ := managerWithOmni(t, t.TempDir())
	for key, val := range map[string]string{"max_file_bytes": "3M", "root_budget": "5G", "reservation_ttl": "7m"} {
		storeSetting(t, m, key, val)
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
