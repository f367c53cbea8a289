package core

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store"
)

// A tenant who swaps a new tree's directory for a symlink out of the root
// between the add's record of it and its making (or undoing) gets nothing
// made or removed where the link points: PlaceTree refuses the link, and
// the rollback's RemoveEmptyTree leaves the empty skeleton directories
// already at the link's target (and the link) as they were.
func TestPlaceAndUndoNeverThroughASymlink(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	m, _ := managerWithOmni(t, root)
	var trees []store.Tree
	if err := m.Store.InTx(ctx, func(tx *store.Tx) (err error) {
		none := func(StoredSettings) (map[string]quota.Limits, error) { return map[string]quota.Limits{}, nil }
		trees, _, _, err = m.RecordProject(ctx, tx, "swapped", HolderOf(ctx), m.now(), none, nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tree := range trees {
		target := filepath.Join(outside, tree.Area)
		for _, sub := range append(area.Skeleton(tree.Area), ".") {
			if err := os.MkdirAll(filepath.Join(target, sub), 0o700); err != nil {
				t.Fatal(err)
			}
			os.Chtimes(filepath.Join(target, sub), old, old)
		}
		if !tree.CreatedDir {
			t.Fatalf("%s: recorded as adopted; the test swaps a directory the add is to make", tree.Path)
		}
		if err := os.Symlink(target, m.abs(tree.Path)); err != nil {
			t.Fatal(err)
		}
		if err := m.PlaceTree(tree); err == nil {
			t.Errorf("PlaceTree(%s), a symlink to %s: no error", tree.Path, target)
		}
		left := RemoveEmptyTree(m.Root, tree.Path, tree.Area)
		for _, sub := range append(area.Skeleton(tree.Area), ".") {
			fi, err := os.Lstat(filepath.Join(target, sub))
			if err != nil {
				t.Errorf("%s, outside the root, after the undo through %s: %v (left %q)", filepath.Join(target, sub), tree.Path, err, left)
				continue
			}
			if !fi.ModTime().Equal(old) || fi.Mode().Perm() != 0o700 {
				t.Errorf("%s, outside the root: mtime %v, mode %v; was %v, 0700", filepath.Join(target, sub), fi.ModTime(), fi.Mode().Perm(), old)
			}
		}
		if fi, err := os.Lstat(m.abs(tree.Path)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the tenant's link at %s after the undo: %v, %v; want it left as it was", tree.Path, fi, err)
		}
	}
}
