package core

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/xfsq/xfsq/area"

	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store"
)

// managerWithOmni initialises a fallback root with one project, omni,
// and returns its manager and store, closed when t ends.
func managerWithOmni(t *testing.T, root string) (*Manager, *store.Store) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(root, StateDir, "xfsq.db"), "host-a")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m, _, err := Init(ctx, Options{Root: root, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	plant(t, m, "omni")
	return m, st
}

// plant makes project name ready as project add would, with the core's own
// tree-making: every area's tree with its default limits and, on the
// fallback, its walk as baseline. (The core's tests cannot call project
// add, which sandbox/internal/lifecycle owns: it imports the core.)
func plant(t testing.TB, m *Manager, name string) {
	t.Helper()
	ctx := context.Background()
	limits := map[string]quota.Limits{}
	for _, a := range area.OfProject {
		l, err := m.defaultLimits(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		limits[a] = l
	}
	excluded, err := m.ExcludedIDs()
	if err != nil {
		t.Fatal(err)
	}
	var trees []store.Tree
	if err := m.Store.InTx(ctx, func(tx *store.Tx) error {
		if _, _, err := tx.InsertProject(ctx, name, HolderOf(ctx), m.now()); err != nil {
			return err
		}
		trees, err = m.RecordTrees(ctx, tx, name, limits, excluded)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var walks []store.WalkRecord
	for _, tree := range trees {
		if err := m.PlaceTree(tree); err != nil {
			t.Fatal(err)
		}
		if !m.IsXFS() {
			w, err := m.MeasureNew(tree)
			if err != nil {
				t.Fatal(err)
			}
			walks = append(walks, w)
		}
	}
	if err := m.Store.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.SetBaselines(ctx, walks); err != nil {
			return err
		}
		return tx.SetProjectState(ctx, name, store.StateReady, "")
	}); err != nil {
		t.Fatal(err)
	}
}

// The full tree kept of a snapshot is bounded: a walk deeper than the bound
// allows is stored cut to its upper levels, while the printed result and
// the totals stay whole.
func TestStoredSnapshotTreeIsBounded(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	m, st := managerWithOmni(t, root)
	// 3 + 9 + 27 directories, beside the inbox/ and uploads/ that add makes:
	// 42 nodes to depth 3, 15 to depth 2.
	ws := filepath.Join(root, area.TreePath("omni", area.Workspace))
	for i := range 3 {
		for j := range 3 {
			for k := range 3 {
				if err := os.MkdirAll(filepath.Join(ws, fmt.Sprint(i), fmt.Sprint(j), fmt.Sprint(k)), 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "0", "0", "0", "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func(n int) { maxStoredNodes = n }(maxStoredNodes)
	maxStoredNodes = 20 // room for two levels (15 nodes), not three (42)

	snaps, err := m.Snapshot(ctx, SnapshotOptions{Projects: []string{"omni"}, Area: area.Workspace, Walk: inventory.Options{Depth: 3}})
	if err != nil || len(snaps) != 1 || snaps[0].Error != "" {
		t.Fatalf("snapshot: %+v %v", snaps, err)
	}
	if depth(&snaps[0].Node) != 3 || snaps[0].Dirs != 42 {
		t.Errorf("the printed result was cut too: depth %d, %d dirs", depth(&snaps[0].Node), snaps[0].Dirs)
	}
	raw, err := st.LatestTree(ctx, store.TreeKey{Project: "omni", Area: area.Workspace})
	if err != nil || raw == nil {
		t.Fatalf("latest tree: %s %v", raw, err)
	}
	stored, top, err := inventory.ParseStored(raw)
	if err != nil {
		t.Fatalf("stored tree: %v: %s", err, raw)
	}
	if depth(stored) != 2 || stored.Dirs != 42 || len(stored.Children) != 5 {
		t.Errorf("stored tree: depth %d, %d dirs, %d children; want depth 2, 42 dirs, 5 children", depth(stored), stored.Dirs, len(stored.Children))
	}
	if len(top) != 1 || !reflect.DeepEqual(top, snaps[0].TopFiles) {
		t.Errorf("stored top files %v, printed %v", top, snaps[0].TopFiles)
	}
}

func depth(n *inventory.Node) int {
	d := 0
	for _, c := range n.Children {
		d = max(d, 1+depth(c))
	}
	return d
}

func TestWalkDisagrees(t *testing.T) {
	for _, c := range []struct {
		walk    uint64
		kernel  int64
		partial bool
		want    bool
	}{
		{1000, 1000, false, false},
		{1010, 1000, false, false}, // 1 % of the larger: not more
		{1011, 1000, false, true},  // files carry another project ID
		{1000, 1011, false, true},  // the kernel counts more than the walk saw
		{2000, 1000, true, false},  // a partial walk proves nothing
		{2000, -1, false, false},   // no kernel count (the fallback)
		{0, 0, false, false},
		{1, 0, false, true},
	} {
		s := store.Snapshot{SizeBytes: c.walk, KernelBytes: c.kernel, Partial: c.partial}
		if got := walkDisagrees(s); got != c.want {
			t.Errorf("walk %d, kernel %d, partial %v: %v, want %v", c.walk, c.kernel, c.partial, got, c.want)
		}
	}
}
