package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A read-only store reads what was written and creates nothing beside the
// database — on a full filesystem there is no room for a -shm or -wal file —
// and refuses writes.
func TestOpenReadOnlyWritesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dsn := filepath.Join(dir, "xfsq.db")
	s, err := Open(ctx, dsn, "h")
	if err != nil {
		t.Fatal(err)
	}
	set := func(s *Store, v string) error {
		return s.InTx(ctx, func(tx *Tx) error { _, err := tx.SetSetting(ctx, "busy_grace", v); return err })
	}
	if err := set(s, "1h"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	before, _ := os.ReadDir(dir)
	ro, err := OpenReadOnly(ctx, dsn, "h")
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if !ro.ReadOnly() {
		t.Error("ReadOnly() is false")
	}
	if v, ok, err := ro.Setting(ctx, "busy_grace"); err != nil || !ok || v != "1h" {
		t.Errorf("read back %q %v %v", v, ok, err)
	}
	if err := set(ro, "2h"); err == nil {
		t.Error("a write to a read-only store succeeded")
	}
	after, _ := os.ReadDir(dir)
	if len(after) != len(before) {
		t.Errorf("opening read-only changed the directory: %v -> %v", before, after)
	}
}
