package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/fault"
	"github.com/xfsq/xfsq/internal/testsupport/gittest"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/internal/testsupport/treetest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

type sweepJSON struct {
	SweepID string `json:"sweep_id"`
	DryRun  bool   `json:"dry_run"`
	Evicted []struct {
		Path, Reason, Policy string
		Bytes                uint64 `json:"freed_bytes"`
	} `json:"evicted"`
	Skipped    []struct{ Path, Reason string } `json:"skipped"`
	BytesFreed uint64                          `json:"freed_bytes"`
}

func (r sweepJSON) skipReason(path string) string {
	for _, s := range r.Skipped {
		if s.Path == path {
			return s.Reason
		}
	}
	return ""
}

func (r sweepJSON) evicted(path string) bool {
	for _, e := range r.Evicted {
		if e.Path == path {
			return true
		}
	}
	return false
}

func TestSweep(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := fallbackSandbox(t, dsn)
		s.ok("project", "add", "omni")
		s.ok("project", "add", "leased")
		s.ok("settings", "set", "cache_quota_per_project", "1k")
		for i, days := range []int{40, 30, 20, 10} {
			treetest.Aged(t, s.root, fmt.Sprintf("cache/omni/pkg%d/blob", i), 600<<10, days)
		}
		treetest.Aged(t, s.root, "cache/omni/young/blob", 600<<10, 3) // past busy_grace, not past cache_min_age
		treetest.Aged(t, s.root, "cache/omni/fresh/blob", 600<<10, 0)
		for _, f := range []string{"projects/omni/build.log", "projects/omni/x.tmp", "projects/omni/coverage/lcov.info",
			"projects/omni/src/main.go", "projects/omni/uploads/old.log", "projects/omni/inbox/old.tmp", "projects/omni/.git/old.log"} {
			treetest.Aged(t, s.root, f, 100, 30)
		}
		treetest.Aged(t, s.root, "projects/omni/new.log", 100, 0)
		treetest.Aged(t, s.root, "scratch/omni/run-old/out", 100, 3)
		treetest.Aged(t, s.root, "scratch/omni/run-new/out", 100, 0)
		treetest.Aged(t, s.root, "cache/leased/old/blob", 5<<20, 90)
		s.ok("lease", "acquire", "leased", "run-1")

		var dry sweepJSON
		s.json(&dry, "sweep", "--all", "--dry-run")
		if !dry.DryRun || len(dry.Evicted) == 0 || !treetest.Exists(filepath.Join(s.root, "cache/omni/pkg0")) {
			t.Fatalf("dry run: %+v (and it must delete nothing)", dry)
		}
		var res sweepJSON
		s.json(&res, "sweep", "--all")
		want := []string{"cache/omni/pkg0", "cache/omni/pkg1", "cache/omni/pkg2", "cache/omni/pkg3", "projects/omni/build.log", "projects/omni/x.tmp", "projects/omni/coverage", "scratch/omni/run-old"}
		for _, p := range want {
			if !res.evicted(p) || treetest.Exists(filepath.Join(s.root, p)) {
				t.Errorf("%s: evicted %v, still on disk %v", p, res.evicted(p), treetest.Exists(filepath.Join(s.root, p)))
			}
		}
		if len(res.Evicted) != len(want) {
			t.Errorf("evicted %+v, want exactly %v", res.Evicted, want)
		}
		for p, why := range map[string]string{"cache/omni/young": "cache_min_age", "cache/omni/fresh": "busy_grace", "projects/omni/new.log": "busy_grace"} {
			if got := res.skipReason(p); !strings.Contains(got, why) {
				t.Errorf("%s: skip reason %q, want %q", p, got, why)
			}
		}
		for _, p := range []string{"cache/omni/young", "cache/omni/fresh", "projects/omni/src/main.go", "projects/omni/uploads/old.log",
			"projects/omni/inbox/old.tmp", "projects/omni/.git/old.log", "projects/omni/new.log", "scratch/omni/run-new", "cache/leased/old"} {
			if !treetest.Exists(filepath.Join(s.root, p)) {
				t.Errorf("%s was deleted", p)
			}
		}
		if why := res.skipReason("projects/leased"); !strings.Contains(why, "leased by run run-1") {
			t.Errorf("the leased project's skip reason: %q", why)
		}
		if res.BytesFreed < 4*600<<10 {
			t.Errorf("bytes_freed %d", res.BytesFreed)
		}
		var evs []map[string]any
		s.json(&evs, "events", "--type", "storage.evicted", "--limit", "100")
		states := map[string][]string{}
		for _, ev := range evs {
			for _, f := range []string{"type", "recorded_at", "project", "area", "path", "freed_bytes", "reason", "policy", "state"} {
				if _, ok := ev[f]; !ok {
					t.Fatalf("evicted record without %q: %v", f, ev)
				}
			}
			states[ev["path"].(string)] = append(states[ev["path"].(string)], ev["state"].(string))
		}
		for _, p := range want {
			if fmt.Sprint(states[p]) != "[done pending]" {
				t.Errorf("journal of %s: %v, want pending then done", p, states[p])
			}
		}
		var swept []sandbox.Event
		s.json(&swept, "events", "--type", "storage.swept")
		if len(swept) != 1 || !strings.Contains(string(swept[0].Payload), `"freed_bytes"`) || !strings.Contains(string(swept[0].Payload), `"per_policy"`) {
			t.Errorf("storage.swept: %+v", swept)
		}
	})
}

// Between planning and deleting: a symlink swapped in for a planned
// directory, a file touched, a lease taken. Each is skipped with its
// reason, and the canary outside the root survives.
func TestSweepRechecksBeforeDeleting(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	s.ok("project", "add", "other")
	s.ok("settings", "set", "cache_quota_per_project", "1k")
	outside := t.TempDir()
	treetest.Aged(t, outside, "canary/precious", 100, 90)
	for _, p := range []string{"cache/omni/swapped/f", "cache/omni/touched/f", "cache/omni/plain/f", "cache/other/old/f"} {
		treetest.Aged(t, s.root, p, 8192, 30)
	}
	os.Symlink(filepath.Join(outside, "canary"), filepath.Join(s.root, "cache/omni/link-out"))
	plan := filepath.Join(t.TempDir(), "plan.json")
	s.ok("sweep", "--all", "--dry-run", "--plan-out", plan)
	os.RemoveAll(filepath.Join(s.root, "cache/omni/swapped"))
	os.Symlink(filepath.Join(outside, "canary"), filepath.Join(s.root, "cache/omni/swapped"))
	os.WriteFile(filepath.Join(s.root, "cache/omni/touched/f"), []byte("fresh"), 0o644)
	s.ok("lease", "acquire", "other", "late-run")
	var res sweepJSON
	s.json(&res, "sweep", "--apply", plan)
	for p, why := range map[string]string{"cache/omni/swapped": "symlink", "cache/omni/touched": "since planning: modified within busy_grace",
		"cache/other/old": "since planning: the project is leased by run late-run"} {
		if got := res.skipReason(p); !strings.Contains(got, why) {
			t.Errorf("%s: skipped %q, want a reason containing %q", p, got, why)
		}
		if !treetest.Exists(filepath.Join(s.root, p)) {
			t.Errorf("%s was deleted", p)
		}
	}
	if !res.evicted("cache/omni/plain") {
		t.Errorf("the unchanged entry was not deleted: %+v", res)
	}
	if data, err := os.ReadFile(filepath.Join(outside, "canary/precious")); err != nil || len(data) != 100 {
		t.Fatalf("the canary outside the root was touched: %v", err)
	}
	if res.evicted("cache/omni/link-out") || !treetest.Exists(filepath.Join(s.root, "cache/omni/link-out")) {
		t.Error("a symlink in the cache was deleted or followed")
	}
}

// Tracked files inside dist/ survive while untracked ones are swept; no git
// binary is used by xfsq (only by the test, to make the repository).
func TestSweepKeepsGitTrackedFiles(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	ws := filepath.Join(s.root, "projects/omni")
	treetest.Aged(t, ws, "dist/tracked.js", 10, 30)
	treetest.Aged(t, ws, "dist/untracked.js", 10, 30)
	treetest.Aged(t, ws, "dist/sub/untracked2.js", 10, 30)
	treetest.Aged(t, ws, "old.log", 10, 30)
	gittest.Run(t, ws, "init", "-q")
	gittest.Run(t, ws, "add", "dist/tracked.js")
	os.Chtimes(filepath.Join(ws, "dist"), time.Now().Add(-30*24*time.Hour), time.Now().Add(-30*24*time.Hour))
	var res sweepJSON
	s.json(&res, "sweep", "omni", "--area", "workspace")
	if !treetest.Exists(filepath.Join(ws, "dist/tracked.js")) || !strings.Contains(res.skipReason("projects/omni/dist/tracked.js"), "git-tracked") {
		t.Errorf("tracked file: exists %v, skip %q", treetest.Exists(filepath.Join(ws, "dist/tracked.js")), res.skipReason("projects/omni/dist/tracked.js"))
	}
	for _, p := range []string{"dist/untracked.js", "dist/sub", "old.log"} {
		if treetest.Exists(filepath.Join(ws, p)) {
			t.Errorf("untracked %s survived: %+v", p, res)
		}
	}
	if !treetest.Exists(filepath.Join(ws, ".git/index")) {
		t.Error(".git was touched")
	}
}

// A sweep killed with SIGKILL at random points: every path gone from disk
// has an evicted record, and the next sweep resolves every pending one.
func TestSweepKilledAtRandomPoints(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	const entries = 12
	for trial := range 52 {
		s := fallbackSandbox(t, "")
		s.ok("project", "add", "omni")
		s.ok("settings", "set", "cache_quota_per_project", "1k")
		for i := range entries {
			treetest.Aged(t, s.root, fmt.Sprintf("cache/omni/e%02d/f", i), 4096, 20+i)
		}
		point := []string{"sweep:after-pending", "sweep:after-delete"}[trial%2]
		killed := *s
		killed.env = append(append([]string{}, s.env...), fmt.Sprintf("%s=%s#%d", fault.Env, point, 1+rng.IntN(entries)))
		if r := killed.run("sweep", "--all"); !r.signaled {
			t.Fatalf("trial %d: the sweep was not killed at %s: exit %d %q", trial, point, r.code, r.stderr)
		}
		var evs []map[string]any
		s.json(&evs, "events", "--type", "storage.evicted", "--limit", "1000")
		recorded := map[string]bool{}
		for _, ev := range evs {
			recorded[ev["path"].(string)] = true
		}
		for i := range entries {
			p := fmt.Sprintf("cache/omni/e%02d", i)
			if !treetest.Exists(filepath.Join(s.root, p)) && !recorded[p] {
				t.Fatalf("trial %d: %s is gone without an evicted record", trial, p)
			}
		}
		var res struct {
			Resolved int `json:"resolved_pending"`
		}
		s.json(&res, "sweep", "--all")
		if res.Resolved != 1 {
			t.Errorf("trial %d: the restart resolved %d pending records, want 1", trial, res.Resolved)
		}
		if pending, _ := s.store().PendingEvictions(t.Context()); len(pending) != 0 {
			t.Fatalf("trial %d: pending records left after the restart: %+v", trial, pending)
		}
	}
}

// Only one sweep per project at a time: a live holder keeps it (a sweep
// naming the project fails, naming the holder; a sweep of all leaves it
// alone), a dead one is taken over.
func TestSweepLock(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	s.ok("project", "add", "beta")
	st := s.store()
	host, _ := os.Hostname()
	live := fmt.Sprintf("%d@%s", os.Getpid(), host)
	if busy, err := st.LockSweep(t.Context(), "omni", store.Claim{Holder: live, Gone: func(string, store.HolderLease) (bool, string) { return false, "" }}); err != nil || busy != "" {
		t.Fatalf("lock: %q %v", busy, err)
	}
	conflict := `xfsq: not swept: project "omni" is being swept by another operation (` + live + `): wait for that sweep to end`
	if r := s.run("sweep", "omni"); r.code != 1 || !strings.HasPrefix(r.stderr, conflict) || r.stdout != "" {
		t.Errorf("sweep omni beside a live sweep: exit %d, stdout %q, stderr %q; want exit 1 and %q", r.code, r.stdout, r.stderr, conflict)
	}
	// Named with another project: what was swept is printed, then why omni was not.
	if r := s.run("sweep", "beta", "omni"); r.code != 1 || !strings.HasPrefix(r.stderr, conflict) || !strings.HasPrefix(r.stdout, "sweep ") {
		t.Errorf("sweep beta omni beside a live sweep of omni: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	var res sweepJSON
	s.json(&res, "sweep", "--all")
	if why := res.skipReason("projects/omni"); !strings.Contains(why, "another sweep") {
		t.Errorf("a sweep of all beside a live one: skip %q", why)
	}
	st.UnlockSweep(t.Context(), "omni", live)
	dead := "999999999@" + host
	st.LockSweep(t.Context(), "omni", store.Claim{Holder: dead, Gone: func(string, store.HolderLease) (bool, string) { return false, "" }})
	s.json(&res, "sweep", "omni")
	if why := res.skipReason("projects/omni"); why != "" {
		t.Errorf("a dead holder's lock was not taken over: %q", why)
	}
}

// A sweep's quota check reads the swept projects' usage fresh (on the
// fallback, a walk now, not the report's hour-old walk) and journals
// storage.quota_exceeded for each tree over its soft limit.
func TestSweepQuotaCheck(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni", "--bytes-soft", "200KiB")
	s.ok("project", "add", "calm", "--bytes-soft", "200KiB")
	s.report() // walks both trees: the report's figures now predate the writes below
	for _, name := range []string{"omni", "calm"} {
		treetest.Aged(t, s.root, "projects/"+name+"/src/data.bin", 300<<10, 0)
	}
	var plan struct {
		OverSoft []struct {
			Project string `json:"project"`
			Area    string `json:"area"`
			Bytes   uint64 `json:"used_bytes"`
			Soft    uint64 `json:"bytes_soft"`
		} `json:"over_soft"`
	}
	s.json(&plan, "sweep", "omni", "--dry-run")
	if len(plan.OverSoft) != 1 || plan.OverSoft[0].Project != "omni" || plan.OverSoft[0].Area != "workspace" ||
		plan.OverSoft[0].Bytes < 300<<10 || plan.OverSoft[0].Soft != 200<<10 {
		t.Errorf("quota check of a dry run of omni: %+v, want omni's workspace at 300 KiB+ over 200 KiB", plan.OverSoft)
	}
	s.ok("sweep", "omni")
	var evs []sandbox.Event
	s.json(&evs, "events", "--type", "storage.quota_exceeded")
	var payload struct {
		Used uint64 `json:"used_bytes"`
		Soft uint64 `json:"bytes_soft"`
	}
	if len(evs) != 1 || evs[0].Project != "omni" || json.Unmarshal(evs[0].Payload, &payload) != nil || payload.Used < 300<<10 || payload.Soft != 200<<10 {
		t.Errorf("storage.quota_exceeded events: %+v, want one for omni at 300 KiB+ over 200 KiB", evs)
	}
}

// A pending deletion whose writer still runs is in progress (a concurrent
// sweep, purge or files rm), not interrupted: a sweep starting meanwhile
// leaves it to its writer. One whose writer is gone is settled.
func TestSweepLeavesDeletionsInProgress(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	treetest.Aged(t, s.root, "cache/omni/busy/f", 4096, 30)
	treetest.Aged(t, s.root, "cache/omni/orphan/f", 4096, 30)
	host, _ := os.Hostname()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	st := s.store()
	for path, writer := range map[string]int{"cache/omni/busy": os.Getpid(), "cache/omni/orphan": dead.Process.Pid} {
		rec := journal.Evicted{SweepID: "sw-other", Path: path, State: "pending", Holder: fmt.Sprintf("%d@%s", writer, host)}
		if err := st.InTx(t.Context(), func(tx *store.Tx) error { return tx.AppendEvent(t.Context(), "omni", "t", rec) }); err != nil {
			t.Fatal(err)
		}
	}
	var res struct {
		Resolved int `json:"resolved_pending"`
	}
	s.json(&res, "sweep", "omni", "--area", "scratch")
	pending, err := st.PendingEvictions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if res.Resolved != 1 || len(pending) != 1 || pending[0].Record.Path != "cache/omni/busy" {
		t.Errorf("resolved %d, left pending %+v; want the dead writer's record settled and the live one's left", res.Resolved, pending)
	}
	var evs []map[string]any
	s.json(&evs, "events", "--type", "storage.evicted")
	if len(evs) != 3 || evs[0]["path"] != "cache/omni/orphan" || evs[0]["state"] != "failed" {
		t.Errorf("journal: %v; want the orphan marked failed (it is still there)", evs)
	}
}

// An mtime stamped in the future (touch -d 2099-…) pinned a cache entry as
// "modified within busy_grace" for ever; it now ages from when it was
// stamped (its ctime), like any other entry.
func TestSweepFutureMtimeDoesNotPin(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	s.ok("settings", "set", "cache_quota_per_project", "1k")
	s.ok("settings", "set", "cache_min_age", "1s")
	s.ok("settings", "set", "busy_grace", "1s")
	future := time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
	treetest.Aged(t, s.root, "cache/omni/pinned/blob", 64<<10, 0)
	for _, p := range []string{"cache/omni/pinned/blob", "cache/omni/pinned"} {
		if err := os.Chtimes(filepath.Join(s.root, p), future, future); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1500 * time.Millisecond) // past busy_grace and cache_min_age since the stamp
	var res sweepJSON
	s.json(&res, "sweep", "omni")
	if !res.evicted("cache/omni/pinned") || treetest.Exists(filepath.Join(s.root, "cache/omni/pinned")) {
		t.Errorf("a cache entry with a future mtime was kept: %+v", res)
	}
}

// A saved plan is applied only as it was made: by this store, for this
// root and host, under the settings in force, within plan_max_age, once.
// Anything else is refused as a whole, deleting nothing, with what to do.
func TestSweepApplyChecksThePlanAsAWhole(t *testing.T) {
	setup := func(t *testing.T) (*testRoot, string) {
		s := fallbackSandbox(t, "")
		s.ok("project", "add", "omni")
		s.ok("project", "add", "beta")
		s.ok("settings", "set", "cache_quota_per_project", "1k")
		treetest.Aged(t, s.root, "cache/omni/old/blob", 8192, 30)
		treetest.Aged(t, s.root, "projects/beta/uploads/precious.log", 100, 30)
		plan := filepath.Join(t.TempDir(), "plan.json")
		s.ok("sweep", "--all", "--dry-run", "--plan-out", plan)
		return s, plan
	}
	edit := func(t *testing.T, plan string, fn func(map[string]any)) {
		data, err := os.ReadFile(plan)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatal(err)
		}
		fn(v)
		data, _ = json.MarshalIndent(v, "", "  ")
		os.WriteFile(plan, append(data, '\n'), 0o644)
	}
	cases := []struct {
		name   string
		change func(t *testing.T, s *testRoot, plan string) *testRoot // the sandbox to apply in
		want   string
	}{
		{"another project's uploads added", func(t *testing.T, s *testRoot, plan string) *testRoot {
			edit(t, plan, func(v map[string]any) {
				p, ok := v["plan"].(map[string]any)
				if !ok {
					t.Fatalf("the saved plan holds no plan: %v", v)
				}
				p["evicted"] = append(p["evicted"].([]any), map[string]any{"project": "omni", "area": "cache", "path": "projects/beta/uploads",
					"bytes": 1, "reason": "x", "policy": "cache_quota_per_project"})
			})
			return s
		}, "was changed after it was made"},
		{"one byte changed", func(t *testing.T, s *testRoot, plan string) *testRoot {
			f, _ := os.OpenFile(plan, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(" ")
			f.Close()
			return s
		}, "was changed after it was made"},
		{"a bare plan, as --plan-out once wrote", func(t *testing.T, s *testRoot, plan string) *testRoot {
			os.WriteFile(plan, []byte(`{"evicted": [{"project": "omni", "area": "workspace", "path": "projects/omni/uploads", "policy": "workspace_trash"}]}`), 0o644)
			return s
		}, "not a plan saved by a dry run of this xfsq"},
		{"older than plan_max_age", func(t *testing.T, s *testRoot, plan string) *testRoot {
			db, err := sql.Open("sqlite", filepath.Join(s.root, ".xfsq", "xfsq.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`UPDATE sweep_plans SET created_at = created_at - ?`, (2 * time.Hour).Microseconds()); err != nil {
				t.Fatal(err)
			}
			return s
		}, "older than plan_max_age (1h"},
		{"settings changed since", func(t *testing.T, s *testRoot, plan string) *testRoot {
			s.ok("settings", "set", "scratch_ttl", "2d")
			return s
		}, "made under other settings"},
		{"applied twice", func(t *testing.T, s *testRoot, plan string) *testRoot {
			s.ok("sweep", "--apply", plan)
			treetest.Aged(t, s.root, "cache/omni/old/blob", 8192, 30) // back, for the check below
			return s
		}, "was already applied"},
		{"another root sharing the store", func(t *testing.T, s *testRoot, plan string) *testRoot {
			// Under the same host name: only by taking it over (the first
			// root gone for good).
			other := newSandbox(t, t.TempDir(), filepath.Join(s.root, ".xfsq", "xfsq.db"))
			other.ok("init", "--take-over-host")
			treetest.Aged(t, other.root, "cache/omni/old/blob", 8192, 30)
			return other
		}, "was made for root"},
		{"another store", func(t *testing.T, s *testRoot, plan string) *testRoot {
			other := fallbackSandbox(t, "")
			other.ok("project", "add", "omni")
			treetest.Aged(t, other.root, "cache/omni/old/blob", 8192, 30)
			return other
		}, "this store never made plan"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, plan := setup(t)
			in := c.change(t, s, plan)
			r := in.run("sweep", "--apply", plan)
			if r.code != 2 || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "--plan-out") {
				t.Errorf("apply: exit %d %q; want exit 2 with %q and how to re-plan", r.code, r.stderr, c.want)
			}
			for _, p := range []string{"cache/omni/old/blob", "projects/beta/uploads/precious.log"} {
				if !treetest.Exists(filepath.Join(in.root, p)) && !(p == "projects/beta/uploads/precious.log" && in != s) {
					t.Errorf("%s was deleted by a refused plan", p)
				}
			}
		})
	}
	t.Run("as made", func(t *testing.T) {
		s, plan := setup(t)
		var res sweepJSON
		s.json(&res, "sweep", "--apply", plan)
		if !res.evicted("cache/omni/old") || treetest.Exists(filepath.Join(s.root, "cache/omni/old")) {
			t.Errorf("the plan as made was not applied: %+v", res)
		}
		var swept []sandbox.Event
		s.json(&swept, "events", "--type", "storage.swept")
		if len(swept) != 1 || !strings.Contains(string(swept[0].Payload), `"plan_id": "pl-`) {
			t.Errorf("storage.swept of an applied plan does not name it: %+v", swept)
		}
	})
}

// A file that git tracks since the plan was made is not deleted by it.
func TestSweepApplyRederivesTrackedSincePlanning(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	ws := filepath.Join(s.root, "projects/omni")
	treetest.Aged(t, ws, "build.log", 10, 30)
	treetest.Aged(t, ws, "keep.log", 10, 30)
	gittest.Run(t, ws, "init", "-q")
	plan := filepath.Join(t.TempDir(), "plan.json")
	s.ok("sweep", "omni", "--dry-run", "--plan-out", plan)
	gittest.Run(t, ws, "add", "keep.log")
	var res sweepJSON
	s.json(&res, "sweep", "--apply", plan)
	if !treetest.Exists(filepath.Join(ws, "keep.log")) || !strings.Contains(res.skipReason("projects/omni/keep.log"), "git-tracked") {
		t.Errorf("a file tracked since planning: exists %v, skipped %q", treetest.Exists(filepath.Join(ws, "keep.log")), res.skipReason("projects/omni/keep.log"))
	}
	if treetest.Exists(filepath.Join(ws, "build.log")) || !res.evicted("projects/omni/build.log") {
		t.Errorf("the untracked trash was not deleted: %+v", res)
	}
}

// One project that cannot be planned (its index garbage, its .git a file
// pointing outside or a dangling link, a directory or a FIFO where the
// index should be, its workspace a symlink) is skipped with its reason
// and its workspace left whole; sweep --all still sweeps the others, and
// a repository nested in a healthy project keeps its tracked files and
// .git while its untracked old trash goes.
func TestSweepAllSkipsUnreadableProjects(t *testing.T) {
	s := fallbackSandbox(t, "")
	ws := func(n string) string { return filepath.Join(s.root, "projects", n) }
	unreadable := map[string]string{ // project -> skip reason fragment
		"garbage":  "cannot be read",
		"pointer":  "outside the project",
		"dangling": "symlink",
		"dirindex": "a directory",
		"fifo":     "named pipe",
		"linked":   "could not be planned",
	}
	s.ok("project", "add", "healthy")
	for n := range unreadable {
		s.ok("project", "add", n)
	}

	lib := filepath.Join(ws("healthy"), "src/lib")
	os.MkdirAll(lib, 0o755)
	gittest.Run(t, lib, "init", "-q")
	for _, f := range []string{"src/lib/dist/app.js", "src/lib/build.log", "src/lib/dist/stale.js", "src/lib/stale.log", "old.log"} {
		treetest.Aged(t, ws("healthy"), f, 100, 30)
	}
	gittest.Run(t, lib, "add", "dist/app.js", "build.log")

	for _, n := range []string{"garbage", "dirindex", "fifo"} {
		gittest.Run(t, ws(n), "init", "-q")
	}
	os.WriteFile(filepath.Join(ws("garbage"), ".git/index"), []byte("DIRC but garbage"), 0o644)
	os.Mkdir(filepath.Join(ws("dirindex"), ".git/index"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(ws("fifo"), ".git/index"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws("pointer"), ".git"), []byte("gitdir: /somewhere/else/.git\n"), 0o644)
	os.Symlink("/nonexistent/.git", filepath.Join(ws("dangling"), ".git"))
	outside := t.TempDir()
	os.RemoveAll(ws("linked"))
	os.Symlink(outside, ws("linked"))
	for n := range unreadable {
		if n == "linked" {
			treetest.Aged(t, outside, "old.log", 100, 30)
			continue
		}
		treetest.Aged(t, ws(n), "old.log", 100, 30)
	}

	var res sweepJSON
	s.json(&res, "sweep", "--all", "--area", "workspace")
	for n, why := range unreadable {
		if got := res.skipReason("projects/" + n); !strings.Contains(got, why) {
			t.Errorf("%s: skip reason %q, want one containing %q", n, got, why)
		}
		if n != "linked" && !treetest.Exists(filepath.Join(ws(n), "old.log")) {
			t.Errorf("%s: old.log was deleted from an unreadable repository", n)
		}
	}
	if !treetest.Exists(filepath.Join(outside, "old.log")) {
		t.Error("a symlinked workspace was followed: its old.log was deleted")
	}
	for _, p := range []string{"src/lib/.git/index", "src/lib/.git/HEAD", "src/lib/dist/app.js", "src/lib/build.log"} {
		if !treetest.Exists(filepath.Join(ws("healthy"), p)) {
			t.Errorf("healthy: %s was deleted", p)
		}
	}
	for _, p := range []string{"src/lib/dist/stale.js", "src/lib/stale.log", "old.log"} {
		if treetest.Exists(filepath.Join(ws("healthy"), p)) || !res.evicted("projects/healthy/"+p) {
			t.Errorf("healthy: untracked old trash %s not swept: %+v", p, res)
		}
	}
}

// Cache entries age by last use (the newest of mtime and a file's atime),
// as BuildKit's GC does: of two entries written a month ago, the one read
// a moment ago is kept and the one nobody read goes.
func TestSweepCacheAgesByLastUse(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	s.ok("settings", "set", "cache_quota_per_project", "80k")
	treetest.Aged(t, s.root, "cache/omni/read-lately/blob", 64<<10, 30)
	treetest.Aged(t, s.root, "cache/omni/unread/blob", 64<<10, 20) // modified more recently than the other
	blob := filepath.Join(s.root, "cache/omni/read-lately/blob")
	if _, err := os.ReadFile(blob); err != nil {
		t.Fatal(err)
	}
	// A read sets the atime only under strictatime, or once after a change
	// under relatime: stamp it as such a read would, whatever the mount does.
	month := time.Now().Add(-30 * 24 * time.Hour)
	if err := os.Chtimes(blob, time.Now(), month); err != nil {
		t.Fatal(err)
	}
	var res sweepJSON
	s.json(&res, "sweep", "omni", "--area", "cache", "--dry-run")
	if !res.evicted("cache/omni/unread") || res.evicted("cache/omni/read-lately") {
		t.Errorf("want the unread entry to go first and the one read lately kept: %+v", res)
	}
	for _, e := range res.Evicted {
		if !strings.Contains(e.Reason, "least recently used") {
			t.Errorf("reason %q does not say it ages by use", e.Reason)
		}
	}
	if out := s.ok("sweep", "--help"); !strings.Contains(out, "noatime") || !strings.Contains(out, "relatime") {
		t.Errorf("sweep --help does not say what noatime and relatime mean for cache age:\n%s", out)
	}
}

// Staged entries of the root's inbound/ that nothing touched for
// inbound_ttl are swept (policy inbound_ttl, journalled, the inbound
// tree's ledger credited on the fallback); younger ones stay, and a
// symlink in it is never followed nor removed, whatever it points at.
func TestSweepInbound(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("settings", "set", "inbound_ttl", "7d")
	treetest.Aged(t, s.root, "inbound/chan-old/msg.bin", 256<<10, 10)
	treetest.Aged(t, s.root, "inbound/chan-new/msg.bin", 4096, 3) // past busy_grace, younger than inbound_ttl
	canary := filepath.Join(t.TempDir(), "canary")
	treetest.Aged(t, canary, "data", 4096, 30)
	os.Chtimes(canary, time.Now().Add(-30*24*time.Hour), time.Now().Add(-30*24*time.Hour))
	link := filepath.Join(s.root, "inbound/outside")
	if err := os.Symlink(canary, link); err != nil {
		t.Fatal(err)
	}
	old := unix.NsecToTimespec(time.Now().Add(-30 * 24 * time.Hour).UnixNano())
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, link, []unix.Timespec{old, old}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Fatal(err)
	}
	s.ok("snapshot", sandbox.RootOwner, "--area", "inbound") // a walk: report counts what was staged outside xfsq
	before := s.report()[inboundKey].UsedBytes
	if before < 256<<10 {
		t.Fatalf("report of inbound before: %d bytes, want the staged 256 KiB+", before)
	}

	planFile := filepath.Join(t.TempDir(), "plan.json")
	var plan sweepJSON
	s.json(&plan, "sweep", "--area", "inbound", "--dry-run", "--plan-out", planFile)
	if len(plan.Evicted) != 1 || plan.Evicted[0].Path != "inbound/chan-old" || plan.Evicted[0].Policy != "inbound_ttl" || plan.Evicted[0].Bytes < 256<<10 {
		t.Errorf("dry run of --area inbound plans %+v, want inbound/chan-old alone (inbound_ttl, 256 KiB+)", plan.Evicted)
	}
	if why := plan.skipReason("inbound/outside"); why != "symlink" {
		t.Errorf("the symlink: skipped for %q, want symlink", why)
	}
	if why := plan.skipReason("inbound/chan-new"); why != "" {
		t.Errorf("the fresh entry: skipped for %q, want not even a line", why)
	}
	if out := s.ok("sweep", "--area", "inbound", "--dry-run"); !strings.Contains(out, "inbound_ttl") || !strings.Contains(out, "inbound/chan-old") {
		t.Errorf("dry run text:\n%s", out)
	}
	var all sweepJSON
	s.json(&all, "sweep", "--all", "--dry-run")
	if !all.evicted("inbound/chan-old") || len(all.Evicted) != 1 {
		t.Errorf("sweep --all --dry-run plans %+v, want inbound/chan-old (--all covers the root's inbound tree)", all.Evicted)
	}
	if _, err := os.Stat(filepath.Join(s.root, "inbound/chan-old/msg.bin")); err != nil {
		t.Fatalf("a dry run deleted: %v", err)
	}

	var res sweepJSON
	s.json(&res, "sweep", "--apply", planFile)
	if len(res.Evicted) != 1 || res.Evicted[0].Path != "inbound/chan-old" || res.BytesFreed < 256<<10 {
		t.Errorf("applied: evicted %+v, freed %d; want inbound/chan-old, 256 KiB+", res.Evicted, res.BytesFreed)
	}
	if _, err := os.Lstat(filepath.Join(s.root, "inbound/chan-old")); !os.IsNotExist(err) {
		t.Errorf("inbound/chan-old after the sweep: %v, want gone", err)
	}
	for _, p := range []string{filepath.Join(s.root, "inbound/chan-new/msg.bin"), filepath.Join(canary, "data")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s after the sweep: %v, want intact", p, err)
		}
	}
	if target, err := os.Readlink(link); err != nil || target != canary {
		t.Errorf("the symlink after the sweep: %q %v", target, err)
	}
	var evs []map[string]any
	s.json(&evs, "events", "--type", "storage.evicted")
	var done []map[string]any
	for _, e := range evs {
		if e["state"] == "done" {
			done = append(done, e)
		}
	}
	if len(done) != 1 || done[0]["path"] != "inbound/chan-old" || done[0]["policy"] != "inbound_ttl" || done[0]["area"] != "inbound" {
		t.Errorf("journal of the sweep: %v, want inbound/chan-old done under inbound_ttl", evs)
	}
	var rows []reportRow
	s.json(&rows, "report", "--area", "inbound")
	if len(rows) != 1 || rows[0].Project != sandbox.RootOwner || rows[0].UsedBytes > before-256<<10 {
		t.Errorf("report --area inbound after the sweep: %+v, want %s's inbound down from %d by the 256 KiB freed", rows, sandbox.RootOwner, before)
	}
	// The fresh entry goes once it is inbound_ttl old.
	s.ok("settings", "set", "inbound_ttl", "2d")
	s.json(&res, "sweep", "--area", "inbound")
	if len(res.Evicted) != 1 || res.Evicted[0].Path != "inbound/chan-new" {
		t.Errorf("under inbound_ttl 2d: evicted %+v, want inbound/chan-new", res.Evicted)
	}
	if r := s.run("sweep", "--area", "inbound", "--all", "--dry-run"); r.code != 0 {
		t.Errorf("sweep --all --area inbound: exit %d %s", r.code, r.stderr)
	}
}
