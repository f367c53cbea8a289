package sandbox_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/quota/fallback"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// Writes through xfsq while a batched snapshot pass runs — after the batch
// read its trees' writes in flight and before a tree's walk, while it
// walks, and after its walk but before the batch is stored — new files,
// replacements of counted files and removals, never leave the ledger
// below what the tree holds: the batch may over-count (a write counted by
// the walk and its ledger row until the next walk), never under-count,
// which would let a write pass the tree's limit on the fallback.
func TestWritesDuringABatchedPassNeverUnderCount(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		names := []string{"a", "b", "c", "d", "e"}
		r.Add(64<<20, names...)
		l, err := r.Manager.Files().ForWrites(r.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		st := sandbox.TestStore(r.Manager)
		put := func(name, p string, n int) {
			t.Helper()
			if _, err := l.Put(r.Ctx, name, "", p, bytes.NewReader(make([]byte, n)), int64(n)); err != nil {
				t.Errorf("put %s/%s: %v", name, p, err)
			}
		}
		rm := func(name, p string) {
			t.Helper()
			if _, err := l.Remove(r.Ctx, name, "", p); err != nil {
				t.Errorf("rm %s/%s: %v", name, p, err)
			}
		}
		// b only grows and d only shrinks, so that no over-count of one
		// kind hides an under-count of the other.
		for i := range 2 * len(names) {
			put("d", fmt.Sprintf("counted%d", i), 300<<10)
		}
		time.Sleep(2 * sandbox.CtimeLag)
		if _, err := r.Manager.Snapshot(r.Ctx, sandbox.SnapshotOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * sandbox.CtimeLag)
		// One batch for the whole pass, however slowly the machine walks.
		sandbox.WalkBatches(t, 1000, time.Hour)
		var order []string
		sandbox.OnSnapshotTree(t, func(_ context.Context, tree store.Tree) {
			if tree.Area != area.Workspace {
				return
			}
			i := len(order)
			order = append(order, tree.Project)
			put("b", "new-as-"+tree.Project+"-begins", 200<<10)
			put("d", fmt.Sprintf("counted%d", 2*i), 10) // replaces a counted file
			rm("d", fmt.Sprintf("counted%d", 2*i+1))
		})
		if _, err := r.Manager.Snapshot(r.Ctx, sandbox.SnapshotOptions{}); err != nil {
			t.Fatal(err)
		}
		if len(order) != len(names) {
			t.Fatalf("the writes ran as %v of the workspaces' walks began: the case tests less than it says", order)
		}
		for _, name := range names {
			walk, err := fallback.Walk(filepath.Join(r.Manager.Root, "projects", name))
			if err != nil {
				t.Fatal(err)
			}
			_, used, _, err := st.Account(r.Ctx, store.TreeKey{Project: name, Area: area.Workspace})
			if err != nil {
				t.Fatal(err)
			}
			if used.Bytes < walk.Bytes || used.Inodes < walk.Inodes {
				t.Errorf("%s after writes during a batched pass (walked in the order %v): the ledger counts %+v, below a fresh walk's %+v", name, order, used, walk)
			}
		}
	})
}
