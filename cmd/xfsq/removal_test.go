package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
	"github.com/xfsq/xfsq/internal/testsupport/treetest"
)

// lastRecord is the newest storage.evicted record of a path.
func (s *testRoot) lastRecord(path string) map[string]any {
	s.t.Helper()
	var evs []map[string]any
	s.json(&evs, "events", "--type", "storage.evicted", "--limit", "100")
	for _, ev := range evs {
		if ev["path"] == path {
			return ev
		}
	}
	return nil
}

// ageDirs sets the mtime of rel and its parents below the root to days ago.
func ageDirs(root, rel string, days int) {
	when := time.Now().Add(-time.Duration(days) * 24 * time.Hour)
	for d := filepath.Join(root, rel); len(d) > len(root); d = filepath.Dir(d) {
		os.Chtimes(d, when, when)
	}
}

// Every deletion path (a sweep of a cache entry, of workspace trash, of a
// scratch run; project rm --purge; files rm) meets a mount inside what it
// deletes: a bind mount of a directory outside the sandbox root (same
// filesystem, so st_dev cannot tell) or a tmpfs. The canary on the mount
// survives, the mount point stays, and the output and the journal say what
// was really removed and what was left in place.
func TestDeletionsLeaveMountsInPlace(t *testing.T) {
	cases := []struct {
		name  string
		entry string // what the command deletes (relative to the root)
		mnt   string // the mount point inside it
		tmpfs bool
		run   func(s *testRoot) string // runs the deletion, returns its output
	}{
		{"sweep cache entry", "cache/omni/e", "cache/omni/e/sub/mnt", false, sweepIt},
		{"sweep cache entry, tmpfs", "cache/omni/e", "cache/omni/e/mnt", true, sweepIt},
		// The workspace walk looks inside trash directories (for
		// repositories), so it offers coverage/'s files and names the mount
		// point instead of offering coverage/ whole.
		{"sweep workspace trash", "projects/omni/coverage", "projects/omni/coverage/mnt", false, func(s *testRoot) string {
			var res sweepJSON
			s.json(&res, "sweep", "omni")
			if !res.evicted("projects/omni/coverage/junk") || res.evicted("projects/omni/coverage") {
				s.t.Errorf("evicted %+v, want coverage/'s file, not coverage/ whole", res.Evicted)
			}
			if !strings.Contains(res.skipReason("projects/omni/coverage/mnt"), "other filesystem") {
				s.t.Errorf("skipped %+v, want the mount point named", res.Skipped)
			}
			return s.ok("sweep", "omni", "--dry-run")
		}},
		{"sweep scratch run", "scratch/omni/run-1", "scratch/omni/run-1/mnt", false, sweepIt},
		{"project rm --purge", "projects/omni", "projects/omni/work/mnt", false, func(s *testRoot) string {
			var res struct {
				PurgedTrees []struct {
					Path, State string
					Left        []struct{ Path, Reason string }
				} `json:"purged_trees"`
			}
			s.json(&res, "project", "rm", "omni", "--purge")
			for _, p := range res.PurgedTrees {
				if p.Path == "projects/omni" && (p.State != "partial" || len(p.Left) != 1 || p.Left[0].Path != "projects/omni/work/mnt") {
					s.t.Errorf("purge of the workspace: %+v, want partial with the mount point left", p)
				}
			}
			return s.ok("events", "--type", "storage.evicted")
		}},
		{"files rm", "projects/omni/d", "projects/omni/d/mnt", false, func(s *testRoot) string {
			r := s.run("files", "rm", "omni", "d", "--recursive")
			if r.code == 0 || !strings.Contains(r.stderr, "left in place: projects/omni/d/mnt (mount point") {
				s.t.Errorf("files rm: exit %d %q, want a failure naming the mount point left in place", r.code, r.stderr)
			}
			return r.stderr
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := fallbackSandbox(t, "")
			s.ok("project", "add", "omni")
			s.ok("settings", "set", "cache_quota_per_project", "1k")
			outside := t.TempDir()
			treetest.Aged(t, outside, "canary", 100, 90)
			treetest.Aged(t, s.root, c.entry+"/junk", 8192, 30)
			if err := os.MkdirAll(filepath.Join(s.root, c.mnt), 0o755); err != nil {
				t.Fatal(err)
			}
			canary := filepath.Join(outside, "canary")
			if c.tmpfs {
				mounttest.Tmpfs(t, filepath.Join(s.root, c.mnt))
				canary = filepath.Join(s.root, c.mnt, "canary")
				treetest.Aged(t, s.root, c.mnt+"/canary", 100, 90)
			} else {
				mounttest.Bind(t, outside, filepath.Join(s.root, c.mnt))
			}
			// The mount's own root too: the planner's walk sees into a bind
			// mount from the same filesystem, and must find nothing fresh.
			ageDirs(s.root, c.mnt, 30)
			out := c.run(s)
			if _, err := os.Stat(canary); err != nil {
				t.Fatalf("the canary on the mount was deleted (%v); output:\n%s", err, out)
			}
			if !treetest.Exists(filepath.Join(s.root, c.mnt)) {
				t.Error("the mount point was removed")
			}
			if treetest.Exists(filepath.Join(s.root, c.entry+"/junk")) {
				t.Errorf("the entry's own file was not removed; output:\n%s", out)
			}
			if c.name == "sweep workspace trash" {
				if rec := s.lastRecord(c.entry + "/junk"); rec == nil || rec["state"] != "done" {
					t.Errorf("journal of %s/junk: %v; want done", c.entry, rec)
				}
				return
			}
			rec := s.lastRecord(c.entry)
			left, _ := json.Marshal(rec["left"])
			if rec == nil || rec["state"] != "partial" || rec["removed_entries"] == float64(0) || !strings.Contains(string(left), c.mnt) {
				t.Errorf("journal of %s: %v; want partial, with what went and the mount point left", c.entry, rec)
			}
		})
	}
}

// sweepIt sweeps omni and checks the output is honest about the mount.
func sweepIt(s *testRoot) string {
	var res sweepJSON
	s.json(&res, "sweep", "omni")
	if len(res.Evicted) != 1 {
		s.t.Errorf("evicted %+v, want the one entry (partly)", res.Evicted)
	}
	found := false
	for _, sk := range res.Skipped {
		found = found || strings.Contains(sk.Reason, "mount point")
	}
	if !found {
		s.t.Errorf("skipped %+v, want the mount point named as left in place", res.Skipped)
	}
	return s.ok("sweep", "omni", "--dry-run")
}

// Tree roots swapped for symlinks into another project (cache/P,
// scratch/P, projects/P) between --plan-out and --apply: the executor
// refuses them, and nothing of the other project goes.
func TestSweepApplyRefusesLinkedTreeRoots(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	s.ok("project", "add", "other")
	s.ok("settings", "set", "cache_quota_per_project", "1k")
	entries := []string{"cache/omni/old", "scratch/omni/run-1", "projects/omni/build.log"}
	for _, p := range []string{"cache/omni/old/f", "scratch/omni/run-1/out", "projects/omni/build.log"} {
		treetest.Aged(t, s.root, p, 8192, 30)
		treetest.Aged(t, s.root, strings.Replace(p, "omni", "other", 1), 8192, 30)
	}
	plan := filepath.Join(t.TempDir(), "plan.json")
	s.ok("sweep", "omni", "--dry-run", "--plan-out", plan)
	for _, tree := range []string{"cache/omni", "scratch/omni", "projects/omni"} {
		os.Rename(filepath.Join(s.root, tree), filepath.Join(s.root, tree+".moved"))
		if err := os.Symlink("other", filepath.Join(s.root, tree)); err != nil {
			t.Fatal(err)
		}
	}
	var res sweepJSON
	s.json(&res, "sweep", "--apply", plan)
	for _, p := range []string{"cache/other/old/f", "scratch/other/run-1/out", "projects/other/build.log"} {
		if !treetest.Exists(filepath.Join(s.root, p)) {
			t.Errorf("%s was deleted through omni's symlinked tree root", p)
		}
	}
	if len(res.Evicted) != 0 {
		t.Errorf("evicted %+v, want nothing", res.Evicted)
	}
	// Re-planning refuses the linked trees before the executor would.
	for _, e := range entries {
		if why := res.skipReason(e); !strings.Contains(why, "is not a real directory reached without links") && !strings.Contains(why, "is a symlink") {
			t.Errorf("%s: skip reason %q, want its tree refused as a link", e, why)
		}
	}
}

// A directory on a planned entry's path swapped for a symlink into another
// project between --plan-out and --apply: the other project's uploads
// survive, the entry is skipped, and the journal names no deletion there.
func TestSweepApplyThroughSwappedDirectory(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	s.ok("project", "add", "other")
	treetest.Aged(t, s.root, "projects/omni/evil/coverage/lcov.info", 100, 30)
	treetest.Aged(t, s.root, "projects/other/uploads/coverage/precious", 100, 30)
	plan := filepath.Join(t.TempDir(), "plan.json")
	s.ok("sweep", "omni", "--dry-run", "--plan-out", plan)
	os.Rename(filepath.Join(s.root, "projects/omni/evil"), filepath.Join(s.root, "projects/omni/evil.moved"))
	if err := os.Symlink("../other/uploads", filepath.Join(s.root, "projects/omni/evil")); err != nil {
		t.Fatal(err)
	}
	var res sweepJSON
	s.json(&res, "sweep", "--apply", plan)
	if !treetest.Exists(filepath.Join(s.root, "projects/other/uploads/coverage/precious")) {
		t.Fatal("the other project's upload was deleted through the swapped-in symlink")
	}
	// Re-planning no longer sees the entry behind the link, so it is
	// dropped before the executor's own check (sweep's unit tests race
	// that one) would refuse the link on its path.
	if why := res.skipReason("projects/omni/evil/coverage"); res.evicted("projects/omni/evil/coverage") ||
		!(strings.Contains(why, "symlink") || strings.Contains(why, "since planning")) {
		t.Errorf("result %+v, want the entry skipped", res)
	}
	if rec := s.lastRecord("projects/omni/evil/coverage"); rec != nil {
		t.Errorf("journalled %v for a deletion that must not happen", rec)
	}
}

// TestProjectRmLease: project rm (with or without --purge) refuses while a
// run holds a lease, naming it (exit 1), dry run or not; --dry-run --force
// says what a purge would delete and changes nothing; --force removes and
// ends the lease.
func TestProjectRmLease(t *testing.T) {
	s := newSandbox(t, t.TempDir(), "")
	s.ok("init")
	s.ok("project", "add", "omni", "--bytes-hard", "10m")
	if err := os.WriteFile(filepath.Join(s.root, "projects/omni/uploads/f"), make([]byte, 32<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	s.ok("lease", "acquire", "omni", "run-7", "--ttl", "1h")
	for _, args := range [][]string{{"project", "rm", "omni"}, {"project", "rm", "omni", "--purge"}} {
		r := s.run(args...)
		if r.code != 1 || !strings.Contains(r.stderr, "run-7") || !strings.Contains(r.stderr, "--force") {
			t.Errorf("%v: exit %d %q, want 1 naming the run and --force", args, r.code, r.stderr)
		}
	}
	// A dry run answers as the real removal would.
	if r := s.run("project", "rm", "omni", "--purge", "--dry-run"); r.code != 1 || !strings.Contains(r.stderr, "run-7") || !strings.Contains(r.stderr, "--force") {
		t.Errorf("dry run while leased: exit %d %q, want 1 naming the run and --force", r.code, r.stderr)
	}
	out := s.ok("project", "rm", "omni", "--purge", "--dry-run", "--force")
	if !strings.Contains(out, "would delete projects/omni: 4") || !strings.Contains(out, "would end the leases of run run-7") {
		t.Errorf("dry run said:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(s.root, "projects/omni/uploads/f")); err != nil {
		t.Fatalf("dry run deleted: %v", err)
	}
	var res struct {
		Forced      bool     `json:"forced"`
		EndedLeases []string `json:"ended_leases"`
	}
	s.json(&res, "project", "rm", "omni", "--purge", "--force")
	if !res.Forced || len(res.EndedLeases) != 1 {
		t.Errorf("forced: %+v", res)
	}
	if out := s.ok("lease", "list"); strings.Contains(out, "run-7") {
		t.Errorf("the lease outlived its project:\n%s", out)
	}
}
