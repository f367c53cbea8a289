package sandbox_test

import (
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// A project's history is read in the same number of statements whether
// its trees hold 10 snapshots each or 300: set-based, never one read a
// snapshot or a tree (a round trip each to a shared PostgreSQL). And it
// is the stored figures, each tree's oldest first.
func TestProjectHistoryIsSetBased(t *testing.T) {
	lag := store.GenerationLag // one probe of the generation per read, as TestHostReadsAreSetBased
	store.GenerationLag = time.Hour
	t.Cleanup(func() { store.GenerationLag = lag })
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<30, "few", "many")
		now := time.Now()
		storeHourly := func(name string, n int) {
			err := sandbox.TestStore(r.Manager).InTx(r.Ctx, func(tx *store.Tx) error {
				for i := n; i >= 1; i-- {
					for _, a := range []string{"workspace", "cache", "scratch"} {
						s := store.Snapshot{Project: name, Area: a, At: now.Add(-time.Duration(i) * time.Hour), SizeBytes: uint64(n-i) << 10, KernelBytes: -1}
						if err := tx.AddSnapshot(r.Ctx, s, []byte{}, 35*24*time.Hour); err != nil {
							return err
						}
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		storeHourly("few", 10)
		storeHourly("many", 300)
		count := func(name string) (int64, sandbox.ProjectHistory) {
			r.Manager.ProjectHistory(r.Ctx, name, sandbox.HistoryOptions{}) // the project's row cached, as a server's is
			before := sandbox.TestStore(r.Manager).Statements()
			h, err := r.Manager.ProjectHistory(r.Ctx, name, sandbox.HistoryOptions{Points: 1000})
			if err != nil {
				t.Fatal(err)
			}
			return sandbox.TestStore(r.Manager).Statements() - before, h
		}
		few, _ := count("few")
		many, h := count("many")
		t.Logf("a project's history: %d statements (10 or 300 snapshots a tree)", many)
		if few != many || many > 4 {
			t.Errorf("a project's history: %d statements for 10 snapshots a tree, %d for 300; want the same few", few, many)
		}
		for _, tr := range h.Trees {
			if len(tr.Points) != 300 || tr.Points[0].Bytes != 0 || tr.Points[299].Bytes != 299<<10 || tr.Thinned {
				t.Errorf("%s: %d points from %d to %d bytes, thinned %v; want 300, 0 to %d", tr.Area, len(tr.Points),
					tr.Points[0].Bytes, tr.Points[len(tr.Points)-1].Bytes, tr.Thinned, 299<<10)
			}
		}
	})
}
