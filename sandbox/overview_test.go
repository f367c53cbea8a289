package sandbox_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

func overviewOf(t *testing.T, ov *sandbox.Overview, name string) sandbox.ProjectOverview {
	t.Helper()
	for _, p := range ov.Projects {
		if p.Project == name {
			return p
		}
	}
	t.Fatalf("no %s in the overview: %+v", name, ov.Projects)
	return sandbox.ProjectOverview{}
}

// TestOverview: the overview's figures come from the store and the last
// snapshot, and one assembled answer is reused until the store records a
// change or it is MaxAge old.
func TestOverview(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		r.Add(10<<20, "omni", "beta")
		ws := filepath.Join(m.Root, "projects/omni")
		os.MkdirAll(filepath.Join(ws, "node_modules/x"), 0o755)
		os.WriteFile(filepath.Join(ws, "node_modules/x/big"), make([]byte, 1<<20), 0o644)
		os.WriteFile(filepath.Join(ws, "small"), make([]byte, 10<<10), 0o644)
		if _, err := m.Snapshot(ctx, sandbox.SnapshotOptions{}); err != nil {
			t.Fatal(err)
		}
		ov, err := m.Overview(ctx, sandbox.OverviewOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ov.Root != m.Root || ov.Host != fixture.Host || ov.Disk.TotalBytes == 0 || ov.GeneratedAt.IsZero() || len(ov.Projects) != 2 {
			t.Fatalf("overview: %+v", ov)
		}
		if m.IsXFS() != (ov.Backend.Kind == "xfs") || ov.Backend.Enforced != m.IsXFS() || (!m.IsXFS() && ov.Backend.Reason == "") {
			t.Errorf("backend %+v", ov.Backend)
		}
		p := overviewOf(t, ov, "omni")
		if p.WorkspaceBytes < 1<<20 || p.QuotaBytes != 10<<20 || p.QuotaUsed == nil || *p.QuotaUsed <= 0.1 || p.LastActivityAt == nil ||
			len(p.TopPaths) == 0 || p.TopPaths[0].Path != "node_modules" || p.TopPaths[0].Bytes < 1<<20 || p.WorkspaceFiles < 5 {
			t.Errorf("omni: %+v (top %+v)", p, p.TopPaths)
		}
		if again, _ := m.Overview(ctx, sandbox.OverviewOptions{}); again != ov {
			t.Error("an unchanged store assembled the overview again")
		}
		// Past MaxAge the old answer is still given, and a new one is made meanwhile.
		if again, _ := m.Overview(ctx, sandbox.OverviewOptions{MaxAge: time.Nanosecond}); again != ov {
			t.Error("an overview past MaxAge was not given while the next one is made")
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if again, _ := m.Overview(ctx, sandbox.OverviewOptions{}); again != ov {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no new overview was assembled past MaxAge")
			}
		}
		r.Add(1<<20, "gamma")
		now, err := m.Overview(ctx, sandbox.OverviewOptions{})
		if err != nil || now == ov || len(now.Projects) != 3 {
			t.Errorf("a project added since is missing: %v %+v", err, now)
		}
	})
}

// TestOverviewRefreshWalksOnce: two refreshes at once walk once; the
// second waits for the first's walk and gets its answer.
func TestOverviewRefreshWalksOnce(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		r.Add(10<<20, "omni")
		var walks atomic.Int32
		entered, release := make(chan struct{}), make(chan struct{})
		m.SetOverviewWalkHook(func() {
			if walks.Add(1) == 1 {
				close(entered)
			}
			<-release
		})
		var wg sync.WaitGroup
		results := make([]*sandbox.Overview, 2)
		refresh := func(i int) {
			defer wg.Done()
			ov, err := m.Overview(ctx, sandbox.OverviewOptions{Refresh: true})
			if err != nil {
				t.Error(err)
			}
			results[i] = ov
		}
		wg.Add(2)
		go refresh(0)
		<-entered
		go refresh(1)
		for deadline := time.Now().Add(5 * time.Second); m.OverviewRefreshWaiters() < 1; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				close(release)
				wg.Wait()
				t.Fatalf("the second refresh never joined the first: %d walks", walks.Load())
			}
		}
		close(release)
		wg.Wait()
		if walks.Load() != 1 || results[0] == nil || results[0] != results[1] {
			t.Errorf("%d walks, answers %p and %p", walks.Load(), results[0], results[1])
		}
		if p := overviewOf(t, results[0], "omni"); p.LastActivityAt == nil {
			t.Errorf("the refresh took no snapshot: %+v", p)
		}
		// Once done, a refresh within refresh_window shares that walk; one
		// after it walks again.
		m.SetOverviewWalkHook(func() { walks.Add(1) })
		if _, err := m.Overview(ctx, sandbox.OverviewOptions{Refresh: true}); err != nil || walks.Load() != 1 {
			t.Errorf("a refresh within the window: %v, %d walks, want still 1", err, walks.Load())
		}
		if _, _, err := m.SetSetting(ctx, "refresh_window", "1s"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond)
		if _, err := m.Overview(ctx, sandbox.OverviewOptions{Refresh: true}); err != nil || walks.Load() != 2 {
			t.Errorf("a refresh after the window: %v, %d walks, want 2", err, walks.Load())
		}
	})
}

// TestProjectStorage: the detail reads the last snapshot to the depth
// asked, and says plainly when there is none.
func TestProjectStorage(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		r.Add(10<<20, "omni")
		d, err := m.ProjectStorage(ctx, "omni", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range d.Trees {
			if tr.SnapshotAt != nil || tr.Tree != nil || tr.TopFiles == nil || tr.BytesHard == 0 && tr.Area == area.Workspace {
				t.Errorf("before any snapshot: %+v", tr)
			}
		}
		ws := filepath.Join(m.Root, "projects/omni")
		os.MkdirAll(filepath.Join(ws, "a/b/c/d"), 0o755)
		os.WriteFile(filepath.Join(ws, "a/b/c/d/f"), make([]byte, 100<<10), 0o644)
		if _, err := m.Snapshot(ctx, sandbox.SnapshotOptions{Projects: []string{"omni"}}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ ask, want int }{{0, 3}, {1, 1}, {2, 2}, {8, 3}} { // the walk kept 3
			d, err := m.ProjectStorage(ctx, "omni", c.ask)
			if err != nil {
				t.Fatal(err)
			}
			var w sandbox.TreeStorage
			for _, tr := range d.Trees {
				if tr.Area == area.Workspace {
					w = tr
				}
			}
			if w.Area != area.Workspace || w.SnapshotAt == nil || w.Tree == nil || len(w.TopFiles) == 0 || nodeDepth(w.Tree) != c.want {
				t.Errorf("depth %d: %+v (depth %d)", c.ask, w, nodeDepth(w.Tree))
			}
		}
		for _, bad := range []int{-1, 9} {
			_, err := m.ProjectStorage(ctx, "omni", bad)
			if errkind.Of(err) != errkind.Input || errkind.FieldOf(err) != "depth" {
				t.Errorf("depth %d: %v", bad, err)
			}
		}
		if _, err := m.ProjectStorage(ctx, "nope", 0); errkind.Of(err) != errkind.NotFound {
			t.Errorf("an unknown project: %v", err)
		}
	})
}

// nodeDepth is how many levels below n its deepest child is.
func nodeDepth(n *inventory.Node) int {
	if n == nil {
		return -1
	}
	d := 0
	for _, c := range n.Children {
		d = max(d, nodeDepth(c)+1)
	}
	return d
}

// TestOverviewRefreshScope: a refresh limited to some projects walks their
// trees and no other (a name that is no project is skipped); refreshes of
// one scope at once, or within refresh_window of the last, walk once; a
// refresh of every tree serves a narrower one, not the other way round.
func TestOverviewRefreshScope(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		r.Add(10<<20, "omni", "beta")
		var mu sync.Mutex
		walked := map[string]int{} // project → trees walked
		sandbox.OnSnapshotTree(t, func(_ context.Context, tree store.Tree) {
			mu.Lock()
			walked[tree.Project]++
			mu.Unlock()
		})
		var refreshes atomic.Int32
		m.SetOverviewWalkHook(func() { refreshes.Add(1) })
		walkedNow := func() map[string]int {
			mu.Lock()
			defer mu.Unlock()
			out := map[string]int{}
			for k, v := range walked {
				out[k] = v
				delete(walked, k)
			}
			return out
		}
		refresh := func(projects ...string) {
			t.Helper()
			if _, err := m.Overview(ctx, sandbox.OverviewOptions{Refresh: true, Projects: projects}); err != nil {
				t.Fatal(err)
			}
		}
		refresh("omni", "gone")
		if w := walkedNow(); w["omni"] == 0 || len(w) != 1 {
			t.Errorf("a refresh of omni walked %v, want omni's trees only", w)
		}
		// Twenty at once of another scope: one walk.
		var wg sync.WaitGroup
		for range 20 {
			wg.Add(1)
			go func() { defer wg.Done(); refresh("beta") }()
		}
		wg.Wait()
		if w, n := walkedNow(), refreshes.Load(); n != 2 || w["beta"] == 0 || len(w) != 1 {
			t.Errorf("20 refreshes of beta at once: %d refreshes in all, walked %v; want 1 more walk, of beta", n, w)
		}
		// Again, in another order: within the window, no walk.
		refresh("gone", "omni")
		refresh("beta")
		if w := walkedNow(); len(w) != 0 {
			t.Errorf("refreshes within refresh_window walked %v", w)
		}
		// Every tree: a wider scope walks, and then serves the narrower.
		refresh()
		if w := walkedNow(); w["omni"] == 0 || w["beta"] == 0 || w[sandbox.RootOwner] == 0 {
			t.Errorf("a refresh of every tree walked %v", w)
		}
		if _, _, err := m.SetSetting(ctx, "refresh_window", "1s"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond)
		refresh()
		refresh("omni")
		if w := walkedNow(); w["omni"] != w["beta"] || w["beta"] == 0 {
			t.Errorf("after the window, every tree then omni: walked %v, want every tree once", w)
		}
	})
}

// TestOverviewTopPathsLeaveWithASweep: a path a sweep deleted since the
// workspace's last snapshot leaves the overview's largest paths at once
// (the journal's deletions, read for every project in one statement),
// without a walk; what the snapshot saw beside it stays.
func TestOverviewTopPathsLeaveWithASweep(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		r.Add(10<<20, "omni")
		ws := filepath.Join(m.Root, "projects/omni")
		os.MkdirAll(filepath.Join(ws, "dist"), 0o755)
		os.MkdirAll(filepath.Join(ws, "data"), 0o755)
		os.WriteFile(filepath.Join(ws, "dist/old.js"), make([]byte, 80<<10), 0o644)
		os.WriteFile(filepath.Join(ws, "data/big"), make([]byte, 600<<10), 0o644)
		old := time.Now().Add(-30 * 24 * time.Hour)
		os.Chtimes(filepath.Join(ws, "dist/old.js"), old, old)
		os.Chtimes(filepath.Join(ws, "dist"), old, old)
		if _, err := m.Snapshot(ctx, sandbox.SnapshotOptions{}); err != nil {
			t.Fatal(err)
		}
		paths := func() []string {
			ov, err := m.Overview(ctx, sandbox.OverviewOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, p := range overviewOf(t, ov, "omni").TopPaths {
				out = append(out, p.Path)
			}
			return out
		}
		if got := paths(); !slices.Contains(got, "dist") || !slices.Contains(got, "data") {
			t.Fatalf("before the sweep: top paths %v, want data and dist", got)
		}
		if _, err := m.Sweep(ctx, sandbox.SweepOptions{Projects: []string{"omni"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(ws, "dist")); !os.IsNotExist(err) {
			t.Fatalf("the sweep left dist/: %v", err)
		}
		if got := paths(); slices.Contains(got, "dist") || !slices.Contains(got, "data") {
			t.Errorf("after the sweep: top paths %v, want data without dist", got)
		}
	})
}

// TestOverviewFollowsChangesThroughXfsq: with the overview cached (and
// restamped, on the fallback, while the change mark stands), each change
// made through xfsq that alters a project's line shows at the next read,
// without a walk: a file put, a file removed (its path leaves top_paths),
// a removed file whose inode a hard link keeps or that the tenant changed
// since the walk (nothing credited, but the journal says the path went), a
// soft limit set.
func TestOverviewFollowsChangesThroughXfsq(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		r.Add(50<<20, "omni")
		ws := filepath.Join(m.Root, "projects/omni")
		os.WriteFile(filepath.Join(ws, "big"), make([]byte, 3<<20), 0o644)
		os.WriteFile(filepath.Join(ws, "linked"), make([]byte, 2<<20), 0o644)
		os.WriteFile(filepath.Join(ws, "touched"), make([]byte, 1<<20+1<<19), 0o644)
		os.MkdirAll(filepath.Join(ws, ".keep"), 0o755)
		os.Link(filepath.Join(ws, "linked"), filepath.Join(ws, ".keep/linked"))
		time.Sleep(2 * sandbox.CtimeLag) // so that the walk counts them, and a removal credits them
		if _, err := m.Snapshot(ctx, sandbox.SnapshotOptions{}); err != nil {
			t.Fatal(err)
		}
		line := func() sandbox.ProjectOverview {
			t.Helper()
			ov, err := m.Overview(ctx, sandbox.OverviewOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return overviewOf(t, ov, "omni")
		}
		has := func(p sandbox.ProjectOverview, name string) bool {
			return slices.ContainsFunc(p.TopPaths, func(tp sandbox.TopPath) bool { return tp.Path == name })
		}
		before := line()
		if !has(before, "big") || !has(before, "linked") || !has(before, "touched") {
			t.Fatalf("top paths %+v, want big, linked and touched", before.TopPaths)
		}
		l, err := m.Files().ForWrites(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Put(ctx, "omni", area.Workspace, "put.bin", bytes.NewReader(make([]byte, 1<<20)), 1<<20); err != nil {
			t.Fatal(err)
		}
		if got := line(); got.WorkspaceBytes < before.WorkspaceBytes+1<<20 {
			t.Errorf("after a 1 MiB put: %d bytes, was %d", got.WorkspaceBytes, before.WorkspaceBytes)
		}
		if _, err := m.Files().Remove(ctx, "omni", area.Workspace, "big"); err != nil {
			t.Fatal(err)
		}
		if got := line(); has(got, "big") {
			t.Errorf("after rm big: top paths %+v", got.TopPaths)
		}
		if _, err := m.Files().Remove(ctx, "omni", area.Workspace, "linked"); err != nil {
			t.Fatal(err)
		}
		if got := line(); has(got, "linked") {
			t.Errorf("after rm linked (its inode kept by a hard link): top paths %+v", got.TopPaths)
		}
		// The tenant changes a file after the walk (its ctime moves): its
		// removal through xfsq credits nothing, but the path went.
		os.Chmod(filepath.Join(ws, "touched"), 0o600)
		if _, err := m.Files().Remove(ctx, "omni", area.Workspace, "touched"); err != nil {
			t.Fatal(err)
		}
		if got := line(); has(got, "touched") {
			t.Errorf("after rm touched (changed since the walk): top paths %+v", got.TopPaths)
		}
		if _, err := m.Set(ctx, "omni", area.Workspace, sandbox.LimitChange{BytesSoft: fixture.Size(7 << 20)}); err != nil {
			t.Fatal(err)
		}
		if got := line(); got.QuotaSoftBytes != 7<<20 {
			t.Errorf("after a soft limit of 7 MiB: quota_soft_bytes %d", got.QuotaSoftBytes)
		}
	})
}
