package core

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/testsupport/threadtest"

	"github.com/xfsq/xfsq/inventory"
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
	if _, err := m.Add(ctx, "omni", AddOptions{}); err != nil {
		t.Fatal(err)
	}
	return m, st
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

// A scheduled pass (the ticker, `snapshot --all`) walks at nice 10 and idle
// I/O priority; a snapshot someone asked for does not. Either way, and
// after a sweep, the caller's thread and every other thread of the process
// keep their priority: a server's request handlers must not slow down
// because a background pass ran.
func TestScheduledPassWalksInTheBackground(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	class, nice := threadtest.Priority(t)
	root := t.TempDir()
	m, _ := managerWithOmni(t, root)
	for _, c := range []struct {
		scheduled         bool
		wantClass, wantNi int
	}{{true, 3, 10}, {false, class, nice}} {
		var walkClass, walkNice int
		walk := inventory.Options{Progress: func(inventory.Progress) { walkClass, walkNice = threadtest.Priority(t) }}
		if _, err := m.Snapshot(context.Background(), SnapshotOptions{Projects: []string{"omni"}, Scheduled: c.scheduled, Walk: walk}); err != nil {
			t.Fatal(err)
		}
		if walkClass != c.wantClass || walkNice != c.wantNi {
			t.Errorf("scheduled %v: walked at I/O class %d, nice %d; want %d, %d", c.scheduled, walkClass, walkNice, c.wantClass, c.wantNi)
		}
	}
	old := filepath.Join(root, "cache", "omni", "old")
	os.MkdirAll(old, 0o755)
	long := time.Now().Add(-90 * 24 * time.Hour)
	os.Chtimes(old, long, long)
	if _, _, err := m.SetSetting(context.Background(), "cache_quota_per_project", "1"); err != nil {
		t.Fatal(err)
	}
	out, err := m.Sweep(context.Background(), SweepOptions{Background: true})
	if err != nil || len(out.Evicted) != 1 {
		t.Fatalf("background sweep: %+v, %v", out.Evicted, err)
	}
	if c, n := threadtest.Priority(t); c != class || n != nice {
		t.Errorf("after the passes the caller's thread has I/O class %d, nice %d; want %d, %d", c, n, class, nice)
	}
	lowered := threadtest.Lingering(nice, 5*time.Second)
	if len(lowered) > 0 {
		t.Errorf("threads %v kept a background pass's priority after it ended", lowered)
	}
}
