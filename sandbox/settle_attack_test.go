package sandbox_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// TestSettlingNeverWaitsOnAStalledFUSEMount: a deletion was journalled as
// pending and its process died (a crash mid-sweep); the tenant then
// mounted a FUSE filesystem whose server never answers on the entry's
// directory. Settling it, as xfsq serve does as it starts and every sweep
// does first, must neither wait for good nor call the entry gone: it is
// marked failed (the next plan decides afresh). Before, the look went
// through the tenant's mount (os.Root.Lstat) and serve never came up.
func TestSettlingNeverWaitsOnAStalledFUSEMount(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		r.Add(100<<20, "a")
		d := filepath.Join(m.Root, "projects/a/d")
		if err := os.MkdirAll(filepath.Join(d, "x"), 0o755); err != nil {
			t.Fatal(err)
		}
		rec := deletion.Record{Area: area.Workspace, Path: "projects/a/d/x", Bytes: 4096, DeletionID: "gone-with-its-process", State: deletion.StatePending}
		if err := sandbox.TestStore(m).InTx(ctx, func(tx *store.Tx) error { return tx.AppendEvent(ctx, "a", "test", rec) }); err != nil {
			t.Fatal(err)
		}
		mounttest.StalledFUSE(t, d)
		done := make(chan error, 1)
		var settled int
		go func() {
			var err error
			settled, err = m.SettleInterrupted(ctx)
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil || settled != 1 {
				t.Fatalf("settled %d, %v; want the one pending deletion", settled, err)
			}
		case <-time.After(3 * time.Second):
			t.Fatal("settling waited on the tenant's stalled FUSE mount")
		}
		var c sandbox.JournalCursor
		news, err := m.ReadJournal(ctx, &c)
		if err != nil {
			t.Fatal(err)
		}
		if len(news.Deletions) != 1 || news.Deletions[0].State != journal.StateFailed {
			t.Errorf("settled as %+v; want failed: the entry may still be there", news.Deletions)
		}
	})
}
