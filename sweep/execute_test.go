package sweep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
)

func executor(t *testing.T, root string, journal *[]deletion.Record) *Executor {
	d, err := saferm.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return &Executor{SweepID: "sw-test", Root: d, Policy: policy, Now: time.Now,
		Leased: func(context.Context, string) (bool, error) { return false, nil },
		Journal: func(_ context.Context, _ string, rec deletion.Record) error {
			*journal = append(*journal, rec)
			return nil
		}}
}

// The executor stops a cache cut as soon as the cap is met, even when the
// plan (made from older sizes) lists more entries.
func TestExecutorStopsCacheCutAtTheCap(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-30 * 24 * time.Hour)
	var plan Plan
	for i := range 5 {
		p := fmt.Sprintf("cache/p/e%d", i)
		os.MkdirAll(filepath.Join(root, p), 0o755)
		os.WriteFile(filepath.Join(root, p, "f"), make([]byte, 40<<10), 0o644)
		os.Chtimes(filepath.Join(root, p, "f"), old, old)
		os.Chtimes(filepath.Join(root, p), old, old)
		plan.Evict = append(plan.Evict, Eviction{Project: "p", Area: area.Cache, Path: p, Policy: PolicyCache})
	}
	// The planner thought the cache held 200 KiB and its entries 40 KiB
	// each; the cap is 130 KiB: two deletions of ~44 KiB reach it.
	plan.CacheCap, plan.CacheBytes = 130<<10, map[string]uint64{"p": 200 << 10}
	var journal []deletion.Record
	res := executor(t, root, &journal).Run(context.Background(), plan)
	if len(res.Evicted) != 2 {
		t.Errorf("evicted %d entries, want 2 (the cap is met after two)", len(res.Evicted))
	}
	for i := 2; i < 5; i++ {
		if _, err := os.Stat(filepath.Join(root, fmt.Sprintf("cache/p/e%d", i))); err != nil {
			t.Errorf("e%d deleted after the cap was met", i)
		}
	}
	if len(journal) != 4 || journal[0].State != "pending" || journal[1].State != "done" {
		t.Errorf("journal %+v, want pending/done per deletion", journal)
	}
}

// A deletion whose pending record cannot be written is not made.
func TestExecutorNeedsTheJournal(t *testing.T) {
	root := t.TempDir()
	p := "cache/p/e"
	os.MkdirAll(filepath.Join(root, p), 0o755)
	old := time.Now().Add(-30 * 24 * time.Hour)
	os.Chtimes(filepath.Join(root, p), old, old)
	var journal []deletion.Record
	x := executor(t, root, &journal)
	x.Journal = func(context.Context, string, deletion.Record) error { return fmt.Errorf("database is gone") }
	res := x.Run(context.Background(), Plan{Evict: []Eviction{{Project: "p", Area: area.Scratch, Path: p}}})
	if len(res.Evicted) != 0 {
		t.Error("deleted without a journal record")
	}
	if _, err := os.Stat(filepath.Join(root, p)); err != nil {
		t.Error("the entry is gone although its pending record was never written")
	}
}

// A sweep past its time budget deletes nothing more and says why.
func TestExecutorBudget(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-30 * 24 * time.Hour)
	var plan Plan
	for i := range 3 {
		p := fmt.Sprintf("scratch/p/r%d", i)
		os.MkdirAll(filepath.Join(root, p), 0o755)
		os.Chtimes(filepath.Join(root, p), old, old)
		plan.Evict = append(plan.Evict, Eviction{Project: "p", Area: area.Scratch, Path: p})
	}
	var journal []deletion.Record
	x := executor(t, root, &journal)
	clock := time.Now()
	x.Now = func() time.Time { clock = clock.Add(time.Second); return clock } // each look at the clock: a second
	x.Budget = 2500 * time.Millisecond
	res := x.Run(context.Background(), plan)
	if len(res.Evicted) == 0 || len(res.Evicted) == 3 {
		t.Fatalf("evicted %d of 3 within a budget that runs out part-way", len(res.Evicted))
	}
	for _, s := range res.Skipped {
		if !strings.Contains(s.Reason, "time budget") {
			t.Errorf("skip %+v, want the time budget as the reason", s)
		}
	}
}

// oldFile writes a file (and its parents) with an mtime a month ago.
func oldFile(t *testing.T, p string) { oldFileOf(t, p, 8192) }

// oldFileOf is oldFile of size bytes.
func oldFileOf(t *testing.T, p string, size int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-30 * 24 * time.Hour)
	os.Chtimes(p, old, old)
	os.Chtimes(filepath.Dir(p), old, old)
}

// A mount inside a planned entry (a bind mount of a directory outside the
// sandbox root, from the same filesystem; a tmpfs) is never entered or
// removed: the canary on it survives, the mount point stays, and the
// result and the journal say what was really removed and what was left.
func TestExecutorLeavesMountsInPlace(t *testing.T) {
	cases := []struct {
		name, area, entry, mnt string
		tmpfs                  bool
	}{
		{"bind mount in a cache entry", area.Cache, "cache/p/e", "cache/p/e/sub/mnt", false},
		{"bind mount in workspace trash", area.Workspace, "projects/p/coverage", "projects/p/coverage/mnt", false},
		{"tmpfs in a scratch run", area.Scratch, "scratch/p/run", "scratch/p/run/mnt", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, outside := t.TempDir(), t.TempDir()
			oldFile(t, filepath.Join(outside, "canary"))
			oldFile(t, filepath.Join(root, c.entry, "junk"))
			os.MkdirAll(filepath.Join(root, c.mnt), 0o755)
			canary := filepath.Join(outside, "canary")
			if c.tmpfs {
				mounttest.Tmpfs(t, filepath.Join(root, c.mnt))
				canary = filepath.Join(root, c.mnt, "canary")
				oldFile(t, canary)
			} else {
				mounttest.Bind(t, outside, filepath.Join(root, c.mnt))
			}
			old := time.Now().Add(-30 * 24 * time.Hour)
			for d := filepath.Dir(filepath.Join(root, c.mnt)); len(d) > len(root); d = filepath.Dir(d) {
				os.Chtimes(d, old, old)
			}
			var journal []deletion.Record
			res := executor(t, root, &journal).Run(context.Background(),
				Plan{Evict: []Eviction{{Project: "p", Area: c.area, Path: c.entry, Policy: "test"}}, CacheBytes: map[string]uint64{"p": 1 << 30}})
			if _, err := os.Stat(canary); err != nil {
				t.Fatalf("the canary on the mount was deleted: %v", err)
			}
			if _, err := os.Lstat(filepath.Join(root, c.mnt)); err != nil {
				t.Errorf("the mount point was removed: %v", err)
			}
			if _, err := os.Lstat(filepath.Join(root, c.entry, "junk")); err == nil {
				t.Error("the entry's own files were not removed")
			}
			if len(res.Evicted) != 1 || res.Evicted[0].Entries != 1 || len(res.Evicted[0].Left) != 1 || res.Evicted[0].Left[0].Path != c.mnt {
				t.Errorf("evicted %+v, want 1 entry removed and %s left", res.Evicted, c.mnt)
			}
			if !hasSkip(res, c.mnt, saferm.LeftMount) {
				t.Errorf("skipped %+v, want %s as a mount point left in place", res.Skipped, c.mnt)
			}
			if len(journal) != 2 || journal[1].State != deletion.StatePartial || journal[1].Entries != 1 || len(journal[1].Left) != 1 || journal[1].Path != c.entry {
				t.Errorf("journal %+v, want pending then partial with the mount point left", journal)
			}
		})
	}
}

func hasSkip(res Result, p, why string) bool {
	for _, s := range res.Skipped {
		if s.Path == p && strings.Contains(s.Reason, why) {
			return true
		}
	}
	return false
}

// Between planning and deleting, a directory on an entry's path (an
// intermediate component, or the tree root itself) is swapped for a
// symlink into another project: nothing in the other project is deleted,
// the entry is skipped with the reason, and nothing is journalled.
func TestExecutorSymlinkSwappedIntoPath(t *testing.T) {
	cases := []struct {
		name, area, entry string
		swap, target      string // swap (relative to the root) becomes a symlink to target
		victim            string // what the link leads the entry to
	}{
		{"intermediate directory", area.Workspace, "projects/a/sub/coverage", "projects/a/sub", "../b/uploads", "projects/b/uploads/coverage/precious"},
		{"cache tree root", area.Cache, "cache/a/e", "cache/a", "b", "cache/b/e/precious"},
		{"scratch tree root", area.Scratch, "scratch/a/run", "scratch/a", "b", "scratch/b/run/precious"},
		{"workspace tree root", area.Workspace, "projects/a/coverage", "projects/a", "b/uploads", "projects/b/uploads/coverage/precious"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			oldFile(t, filepath.Join(root, c.entry, "junk"))
			oldFile(t, filepath.Join(root, c.victim))
			os.Rename(filepath.Join(root, c.swap), filepath.Join(root, c.swap+".moved"))
			if err := os.Symlink(c.target, filepath.Join(root, c.swap)); err != nil {
				t.Fatal(err)
			}
			var journal []deletion.Record
			res := executor(t, root, &journal).Run(context.Background(),
				Plan{Evict: []Eviction{{Project: "a", Area: c.area, Path: c.entry, Policy: "test"}}, CacheBytes: map[string]uint64{"a": 1 << 30}})
			if _, err := os.Stat(filepath.Join(root, c.victim)); err != nil {
				t.Fatalf("the deletion followed the symlink into project b: %v", err)
			}
			if len(res.Evicted) != 0 || len(journal) != 0 {
				t.Errorf("evicted %+v, journal %+v; want nothing", res.Evicted, journal)
			}
			if !hasSkip(res, c.entry, "symlink") && !hasSkip(res, c.entry, "without links") {
				t.Errorf("skipped %+v, want %s skipped for the link on its path", res.Skipped, c.entry)
			}
		})
	}
}

// A plan entry outside the tree of its project and area is not deleted.
func TestExecutorKeepsEntriesInTheirTree(t *testing.T) {
	root := t.TempDir()
	oldFile(t, filepath.Join(root, "projects/b/uploads/precious"))
	var journal []deletion.Record
	res := executor(t, root, &journal).Run(context.Background(), Plan{Evict: []Eviction{
		{Project: "a", Area: area.Cache, Path: "projects/b/uploads"},
		{Project: "a", Area: area.Workspace, Path: "projects/a/../b/uploads"},
	}})
	if _, err := os.Stat(filepath.Join(root, "projects/b/uploads/precious")); err != nil || len(res.Evicted) != 0 {
		t.Fatalf("an entry outside its tree was deleted: %+v", res)
	}
}

// Tree roots that are not real directories reached without links are
// refused by the walks: never listed, never offered.
func TestGathererRefusesLinkedTreeRoots(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"cache/b/e/f", "scratch/b/run/f", "projects/b/coverage/f"} {
		oldFile(t, filepath.Join(root, p))
	}
	for _, l := range []struct{ link, target string }{{"cache/a", "b"}, {"scratch/a", "b"}, {"projects/a", "b"}, {"cache/abs", filepath.Join(root, "cache/b")}} {
		os.Symlink(l.target, filepath.Join(root, l.link))
	}
	d, err := saferm.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	g := &Gatherer{Root: d, Globs: policy.TrashGlobs}
	for _, c := range []struct {
		area, tree string
		walk       func(string) (Tree, error)
	}{
		{area.Cache, "cache/a", func(p string) (Tree, error) { return g.TopLevel(area.Cache, p) }},
		{area.Cache, "cache/abs", func(p string) (Tree, error) { return g.TopLevel(area.Cache, p) }},
		{area.Scratch, "scratch/a", func(p string) (Tree, error) { return g.TopLevel(area.Scratch, p) }},
		{area.Workspace, "projects/a", func(p string) (Tree, error) { return g.Workspace(t.Context(), p) }},
	} {
		tr, err := c.walk(c.tree)
		var refused *TreeRefusedError
		if !errors.As(err, &refused) || len(tr.Entries) != 0 {
			t.Errorf("%s: %v with %d entries, want it refused and nothing offered", c.tree, err, len(tr.Entries))
		}
	}
	if tr, err := g.TopLevel(area.Cache, "cache/b"); err != nil || len(tr.Entries) != 1 {
		t.Errorf("a real tree: %+v %v", tr, err)
	}
}

// With a ledger to credit (the fallback), each deletion credits only what
// its tree's last walk counted (CountChangedBefore = Cutoff) and reports
// and journals all it freed; an inbound entry is removed inside inbound/.
func TestExecutorCreditsTheLedger(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"inbound/walked/f", "inbound/changed/f"} {
		oldFileOf(t, filepath.Join(root, p), 40<<10)
	}
	var journal []deletion.Record
	x := executor(t, root, &journal)
	credited := map[string]uint64{}
	uncounted := map[string]int{}
	x.Cutoff = func(_ context.Context, ev Eviction) (time.Time, error) {
		if ev.Path == "inbound/changed" {
			return time.Unix(0, 1), nil // walked before anything in it changed: nothing counts
		}
		return time.Now().Add(time.Hour), nil
	}
	x.Credit = func(_ context.Context, ev Eviction, rep saferm.Report, _ time.Time) error {
		credited[ev.Path] += rep.Bytes
		uncounted[ev.Path] += len(rep.Uncounted)
		return nil
	}
	plan := Plan{Evict: []Eviction{
		{Project: "_root", Area: area.Inbound, Path: "inbound/walked", Policy: PolicyInbound},
		{Project: "_root", Area: area.Inbound, Path: "inbound/changed", Policy: PolicyInbound}}}
	res := x.Run(context.Background(), plan)
	if len(res.Evicted) != 2 || res.Evicted[0].Bytes < 40<<10 || res.Evicted[1].Bytes < 40<<10 {
		t.Fatalf("evicted %+v, want both with all they freed", res.Evicted)
	}
	if credited["inbound/walked"] != res.Evicted[0].Bytes || credited["inbound/changed"] != 0 {
		t.Errorf("credited %v, want all of walked (%d), nothing of changed", credited, res.Evicted[0].Bytes)
	}
	// What the walk did not count is handed on by inode, for the ledger
	// rows of xfsq's own writes to credit.
	if uncounted["inbound/walked"] != 0 || uncounted["inbound/changed"] != 1 {
		t.Errorf("inodes handed on uncounted: %v, want the one file of changed", uncounted)
	}
	for _, r := range journal {
		if r.State == deletion.StateDone && r.Bytes < 40<<10 {
			t.Errorf("journalled %+v, want all it freed", r)
		}
	}
}

// An entry a tenant swaps, after the sweep's walk, for a directory moved in
// from its workspace (old mtimes, files with a ctime older than the walk,
// which counted them in the workspace, not here) is deleted, but credits
// inbound's ledger nothing: the ledger would read less than inbound holds.
func TestExecutorCreditsNothingMovedInSinceTheWalk(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-30 * 24 * time.Hour)
	for _, p := range []string{"projects/a/uploads/d/big", "inbound/x/small"} {
		oldFileOf(t, filepath.Join(root, p), 200<<10)
	}
	time.Sleep(20 * time.Millisecond)
	walked := time.Now() // inbound's walk: it saw inbound/x/small
	time.Sleep(20 * time.Millisecond)
	os.RemoveAll(filepath.Join(root, "inbound/x"))
	if err := os.Rename(filepath.Join(root, "projects/a/uploads/d"), filepath.Join(root, "inbound/x")); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(filepath.Join(root, "inbound/x"), old, old)
	var journal []deletion.Record
	x := executor(t, root, &journal)
	credited := uint64(0)
	x.Cutoff = func(context.Context, Eviction) (time.Time, error) { return walked, nil }
	x.Credit = func(_ context.Context, _ Eviction, rep saferm.Report, _ time.Time) error {
		credited += rep.Bytes
		return nil
	}
	// The moved directory itself, or an entry below it, deleted through
	// its parent: the entry's own ctime is old, the parent's is not.
	for _, evict := range []string{"inbound/x/big", "inbound/x"} {
		credited = 0
		os.Chtimes(filepath.Join(root, "inbound/x"), old, old) // the first removal touched it
		res := x.Run(context.Background(), Plan{Evict: []Eviction{{Project: "_root", Area: area.Inbound, Path: evict, Policy: PolicyInbound}}})
		if len(res.Evicted) != 1 || res.Evicted[0].Bytes < 4096 {
			t.Fatalf("%s: evicted %+v, skipped %+v, want it evicted with all it freed", evict, res.Evicted, res.Skipped)
		}
		if credited != 0 {
			t.Errorf("%s: credited %d bytes to inbound's ledger for files its walk never counted, want 0", evict, credited)
		}
	}
}
