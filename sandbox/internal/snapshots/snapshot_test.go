package snapshots

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/sandbox/internal/coretest"
	"github.com/xfsq/xfsq/store"
)

// The full tree kept of a snapshot is bounded: a walk deeper than the bound
// allows is stored cut to its upper levels, while the printed result and
// the totals stay whole.
func TestStoredSnapshotTreeIsBounded(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	m, st := coretest.Omni(t, root)
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

	snaps, err := New(m).Snapshot(ctx, core.SnapshotOptions{Projects: []string{"omni"}, Area: area.Workspace, Walk: inventory.Options{Depth: 3}})
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
