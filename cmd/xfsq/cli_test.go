package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/textout"
	"github.com/xfsq/xfsq/internal/fault"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/internal/testsupport/treetest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// envBinary names the xfsq binary the tests run; TestMain builds it on the
// host and the kernel harness passes the variable into the test kernel.
const envBinary = "XFSQ_TEST_BIN"

func TestMain(m *testing.M) {
	if os.Getenv(envBinary) == "" {
		dir, err := os.MkdirTemp("", "xfsq-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		bin := filepath.Join(dir, "xfsq")
		// As shipped (scripts/build-xfsq.sh): static, no cgo, no man page
		// generator; plus the fault tag, which arms the crash tests' kill points.
		build := exec.Command("go", "build", "-tags", "urfave_cli_no_docs,"+fault.Tag, "-o", bin, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build xfsq: %v\n%s", err, out)
			os.Exit(1)
		}
		os.Setenv(envBinary, bin)
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// testRoot is one testRoot root driven through the real binary.
type testRoot struct {
	t    testing.TB
	root string
	db   string // "" for the default SQLite file
	env  []string
}

func newSandbox(t testing.TB, root, db string) *testRoot {
	return &testRoot{t: t, root: root, db: db, env: []string{"XFSQ_HOST=test-host"}}
}

type result struct {
	stdout, stderr string
	code           int
	signaled       bool
}

func (s *testRoot) run(args ...string) result {
	s.t.Helper()
	return s.runAs(-1, args...)
}

// runAs runs xfsq as the user uid (-1: as the test runs).
func (s *testRoot) runAs(uid int, args ...string) result {
	s.t.Helper()
	full := []string{"--root", s.root}
	if s.db != "" {
		full = append(full, "--db", s.db)
	}
	cmd := exec.Command(os.Getenv(envBinary), append(full, args...)...)
	cmd.Env = append(os.Environ(), s.env...)
	if uid >= 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.signaled = true
		}
	} else if err != nil {
		s.t.Fatal(err)
	}
	return r
}

// ok runs a command that must succeed and returns its stdout.
func (s *testRoot) ok(args ...string) string {
	s.t.Helper()
	r := s.run(args...)
	if r.code != 0 {
		s.t.Fatalf("xfsq %v: exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// json runs a command with --json that must succeed and decodes its output.
func (s *testRoot) json(v any, args ...string) {
	s.t.Helper()
	out := s.ok(append([]string{"--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		s.t.Fatalf("xfsq %v: output is not JSON: %v\n%s", args, err, out)
	}
}

func (s *testRoot) store() *store.Store {
	s.t.Helper()
	dsn := s.db
	if dsn == "" {
		dsn = filepath.Join(s.root, ".xfsq", "xfsq.db")
	}
	st, err := store.Open(context.Background(), dsn, "test-host")
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { st.Close() })
	return st
}

type reportRow struct {
	Project    string        `json:"project"`
	Area       string        `json:"area"`
	ProjectID  uint32        `json:"project_id"`
	UsedBytes  uint64        `json:"used_bytes"`
	UsedInodes uint64        `json:"used_inodes"`
	BytesSoft  uint64        `json:"bytes_soft"`
	BytesHard  uint64        `json:"bytes_hard"`
	InodesSoft uint64        `json:"inodes_soft"`
	InodesHard uint64        `json:"inodes_hard"`
	Backend    backendObject `json:"backend"`
	// the walk a fallback tree's usage starts from
	UsageAsOf *time.Time `json:"usage_walked_at"`
}

// backendObject is the backend object of docs/design/README.md#output-conventions, as every JSON output gives it.
type backendObject struct {
	Kind     string `json:"kind"`
	Enforced bool   `json:"enforced"`
	Reason   string `json:"reason"`
}

func (s *testRoot) report() map[string]reportRow {
	var rows []reportRow
	s.json(&rows, "report")
	out := map[string]reportRow{}
	for _, r := range rows {
		out[r.Project+"/"+r.Area] = r
	}
	return out
}

func fallbackSandbox(t *testing.T, db string) *testRoot {
	s := newSandbox(t, t.TempDir(), db)
	s.ok("init")
	return s
}

func TestInit(t *testing.T) {
	s := newSandbox(t, t.TempDir(), "")
	var res sandbox.InitResult
	s.json(&res, "init")
	if res.Backend.Kind != "fallback" || res.Backend.Enforced || !strings.Contains(res.Backend.Reason, "is not XFS") {
		t.Errorf("init on a non-XFS root: backend %+v; want fallback, not enforced, with the reason", res.Backend)
	}
	for _, d := range []string{"projects", "cache", "scratch", "inbound", ".xfsq", ".xfsq/xfsq.db"} {
		if _, err := os.Stat(filepath.Join(s.root, d)); err != nil {
			t.Errorf("init did not create %s: %v", d, err)
		}
	}
	if out := s.ok("init"); !strings.Contains(out, "already initialised") || !strings.Contains(out, "backend: fallback (") {
		t.Errorf("second init: %q", out)
	}
	missing := newSandbox(t, filepath.Join(t.TempDir(), "nope"), "")
	if r := missing.run("init"); r.code != 1 || !strings.Contains(r.stderr, "does not exist") {
		t.Errorf("init of a missing root: exit %d %q", r.code, r.stderr)
	}
}

func TestProjectLifecycle(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := fallbackSandbox(t, dsn)
		s.ok("project", "add", "omni", "--bytes-hard", "1m", "--bytes-soft", "512k", "--inodes-hard", "100", "--cache-bytes-hard", "2MiB")
		for _, d := range []string{"projects/omni/uploads", "projects/omni/inbox", "cache/omni"} {
			if fi, err := os.Stat(filepath.Join(s.root, d)); err != nil || !fi.IsDir() {
				t.Errorf("project add did not create %s", d)
			}
		}
		rep := s.report()
		ws, cache := rep["omni/workspace"], rep["omni/cache"]
		if ws.BytesHard != 1<<20 || ws.BytesSoft != 512<<10 || ws.InodesHard != 100 || cache.BytesHard != 2<<20 {
			t.Errorf("limits in report: %+v %+v", ws, cache)
		}
		if ws.ProjectID == 0 || cache.ProjectID == 0 || ws.ProjectID == cache.ProjectID {
			t.Errorf("each tree needs its own nonzero ID: %d %d", ws.ProjectID, cache.ProjectID)
		}
		if ws.Backend.Kind != "fallback" || ws.Backend.Enforced || ws.Backend.Reason == "" {
			t.Errorf("backend %+v", ws.Backend)
		}
		if out := s.ok("project", "check", "omni"); !strings.Contains(out, `project "omni": ok`) {
			t.Errorf("check of an empty project: %q", out)
		}
		// Text names the backend in its one line, with the fallback's short
		// reason, never as the JSON's object.
		if out := s.ok("project", "show", "omni"); !strings.Contains(out, "backend: fallback (") || strings.Contains(out, "{fallback") {
			t.Errorf("project show's backend line: %q", out)
		}
		if ws.UsageAsOf == nil || time.Since(*ws.UsageAsOf) > time.Minute {
			t.Errorf("the fallback report does not say when its walk began: %v", ws.UsageAsOf)
		}
		before := s.report()["omni/workspace"]
		os.WriteFile(filepath.Join(s.root, "projects/omni/data"), make([]byte, 600<<10), 0o644)
		// A write made outside xfsq counts from the next walk on: not in a
		// report or a plain show, at once in show --refresh (which walks).
		if got := s.report()["omni/workspace"]; got.UsedBytes != before.UsedBytes || !got.UsageAsOf.Equal(*before.UsageAsOf) {
			t.Errorf("a report within the hour walked again: %+v, before %+v", got, before)
		}
		var shown struct {
			Trees []reportRow `json:"trees"`
		}
		s.json(&shown, "project", "show", "omni")
		for _, tr := range shown.Trees {
			if tr.Area == "workspace" && (tr.UsedBytes != before.UsedBytes || !tr.UsageAsOf.Equal(*before.UsageAsOf)) {
				t.Errorf("project show without --refresh walked: %+v, before %+v", tr, before)
			}
		}
		s.json(&shown, "project", "show", "omni", "--refresh")
		for _, tr := range shown.Trees {
			if tr.Area == "workspace" && (tr.UsedBytes < 600<<10 || tr.UsedInodes != 4) {
				t.Errorf("project show --refresh after writing 600 KiB: %+v", tr)
			}
		}
		if got := s.report()["omni/workspace"]; got.UsedBytes < 600<<10 || got.UsedInodes != 4 || !got.UsageAsOf.After(*before.UsageAsOf) {
			t.Errorf("report after show walked the tree: %+v", got)
		}
		if r := s.run("project", "check", "omni"); r.code != 0 || !strings.Contains(r.stderr, "warn: ") || !strings.Contains(r.stderr, "soft disk limit") {
			t.Errorf("check over soft: exit %d, stderr %q; want 0 with a warning on stderr", r.code, r.stderr)
		}
		os.WriteFile(filepath.Join(s.root, "projects/omni/more"), make([]byte, 600<<10), 0o644)
		if r := s.run("project", "check", "omni"); r.code != 0 {
			t.Errorf("check without --refresh walked and saw the new write: exit %d %q", r.code, r.stderr)
		}
		r := s.run("project", "check", "omni", "--refresh")
		if r.code != 3 || !strings.Contains(r.stderr, `project "omni": disk quota exceeded (`) || !strings.Contains(r.stderr, "of 1.0 MiB)") {
			t.Errorf("check over hard: exit %d, stderr %q; want 3 and the quota message", r.code, r.stderr)
		}
		var adm sandbox.Admission
		if r := s.run("--json", "project", "check", "omni"); r.code != 3 || json.Unmarshal([]byte(r.stdout), &adm) != nil || adm.Decision != "deny" {
			t.Errorf("check --json over hard: exit %d %q", r.code, r.stdout)
		}

		s.ok("project", "set", "omni", "--bytes-hard", "10m")
		if got := s.report()["omni/workspace"]; got.BytesHard != 10<<20 || got.BytesSoft != 512<<10 {
			t.Errorf("after set: %+v (soft must be kept)", got)
		}
		s.ok("project", "set", "omni", "--area", "cache", "--inodes-hard", "5")
		if got := s.report()["omni/cache"]; got.InodesHard != 5 || got.BytesHard != 2<<20 {
			t.Errorf("after set on cache: %+v", got)
		}
		var evs []sandbox.Event
		s.json(&evs, "events", "--type", "quota.changed", "--project", "omni")
		if len(evs) != 2 || evs[0].Actor == "" || evs[0].Host != "test-host" {
			t.Fatalf("quota.changed events: %+v", evs)
		}
		var change struct {
			Area     string `json:"area"`
			Old, New struct {
				BytesSoft uint64 `json:"bytes_soft"`
				BytesHard uint64 `json:"bytes_hard"`
			}
		}
		json.Unmarshal(evs[1].Payload, &change)
		if change.Area != "workspace" || change.Old.BytesHard != 1<<20 || change.New.BytesHard != 10<<20 || change.New.BytesSoft != 512<<10 {
			t.Errorf("quota.changed payload %s: want area, old and new limits", evs[1].Payload)
		}

		s.ok("project", "add", "keep")
		if out := s.ok("project", "list"); !strings.Contains(out, "omni") || !strings.Contains(out, "keep") {
			t.Errorf("list: %q", out)
		}
		out := s.ok("project", "rm", "keep")
		if !strings.Contains(out, "kept on disk: projects/keep") {
			t.Errorf("rm without --purge must say what it left: %q", out)
		}
		if _, err := os.Stat(filepath.Join(s.root, "projects/keep")); err != nil {
			t.Error("rm without --purge deleted the data")
		}
		s.ok("project", "rm", "omni", "--purge")
		for _, d := range []string{"projects/omni", "cache/omni"} {
			if _, err := os.Stat(filepath.Join(s.root, d)); !os.IsNotExist(err) {
				t.Errorf("rm --purge left %s", d)
			}
		}
		s.json(&evs, "events", "--type", "storage.evicted", "--project", "omni")
		states := map[string][]string{}
		for _, ev := range evs {
			var rec struct{ Path, State, Reason string }
			json.Unmarshal(ev.Payload, &rec)
			if rec.Reason != "purge" {
				t.Errorf("evicted reason %q", rec.Reason)
			}
			states[rec.Path] = append(states[rec.Path], rec.State)
		}
		for _, p := range []string{"projects/omni", "cache/omni"} {
			if fmt.Sprint(states[p]) != "[done pending]" {
				t.Errorf("journal of purging %s: %v, want a pending record then a done one", p, states[p])
			}
		}
		s.json(&evs, "events", "--type", "project.removed")
		if len(evs) != 2 {
			t.Errorf("project.removed events: %d", len(evs))
		}
		if r := s.run("project", "show", "omni"); r.code != 1 || !strings.Contains(r.stderr, `project "omni" not found`) {
			t.Errorf("show after rm: exit %d %q", r.code, r.stderr)
		}
		// A removed project's IDs go back to the pool.
		s.ok("project", "add", "next")
		if got := s.report()["next/workspace"]; got.ProjectID != ws.ProjectID {
			t.Errorf("new project got ID %d; the purged project's %d was not reused", got.ProjectID, ws.ProjectID)
		}
	})
}

func TestBadInput(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	cases := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"project", "add", "Omni"}, 2, "1-63 characters"},
		{[]string{"project", "add", "../etc"}, 2, "is invalid"},
		{[]string{"project", "add", "x", "--bytes-hard", "5x"}, 2, "--bytes-hard: \"5x\" is not a size: use a byte count"},
		{[]string{"project", "add", "x", "--inodes-hard", "1k"}, 2, "--inodes-hard: \"1k\" is not a count"},
		{[]string{"project", "add", "x", "--bytes-soft", "2g", "--bytes-hard", "1g"}, 2, "soft byte limit"},
		{[]string{"project", "add", "omni"}, 1, `project "omni" already exists`},
		{[]string{"project", "add"}, 2, "project add takes one project NAME"},
		{[]string{"project", "add", "a", "b"}, 2, "got 2 arguments"},
		{[]string{"project", "set", "omni", "--area", "attic", "--bytes-hard", "1g"}, 2, `unknown area "attic"`},
		{[]string{"project", "set", "omni"}, 2, "nothing to change"},
		{[]string{"project", "set", "ghost", "--bytes-hard", "1g"}, 1, `project "ghost" not found`},
		{[]string{"project", "check", "ghost"}, 1, `project "ghost" not found`},
		{[]string{"project", "rm", "ghost"}, 1, "not found"},
		{[]string{"settings", "set", "colour", "blue"}, 2, "unknown setting \"colour\"; known settings: default_quota"},
		{[]string{"settings", "set", "busy_grace", "soon"}, 2, "busy_grace: \"soon\" is not a duration"},
		{[]string{"settings", "set", "default_quota"}, 2, "settings set takes KEY VALUE"},
		// Durations past int64 nanoseconds once wrapped round to minutes.
		{[]string{"settings", "set", "busy_grace", "213504d"}, 2, `busy_grace: "213504d" is too long`},
		{[]string{"lease", "acquire", "omni", "run-1", "--ttl", "213504d"}, 2, `--ttl: "213504d" is too long`},
		// A zero that switches a safety rail off must be said explicitly.
		{[]string{"settings", "set", "busy_grace", "0s"}, 2, "busy_grace: 0s switches a safety rail off"},
		{[]string{"settings", "set", "reservation_ttl", "0"}, 2, "--allow-zero"},
		{[]string{"events", "--since", "yesterday"}, 2, "--since \"yesterday\""},
		{[]string{"export", "xfs-projects"}, 1, "needs the xfs backend"},
		{[]string{"bogus"}, 2, `unknown command "bogus"`},
		{[]string{"project", "bogus"}, 2, `unknown command "bogus"`},
		{[]string{"project", "add", "--nope", "x"}, 2, "flag provided but not defined: -nope: see xfsq project add --help"},
		{[]string{"--nope", "report"}, 2, "flag provided but not defined: -nope: see xfsq --help"},
		{[]string{"--id-range", "100-200junk", "project", "list"}, 2, `--id-range "100-200junk": use FIRST-LAST`},
		{[]string{"--id-range", "100-+200", "project", "list"}, 2, `--id-range "100-+200"`},
		{[]string{"--id-range", " 100-200", "project", "list"}, 2, `--id-range " 100-200"`},
	}
	for _, c := range cases {
		r := s.run(c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.stderr) {
			t.Errorf("xfsq %v: exit %d, stderr %q; want exit %d containing %q", c.args, r.code, r.stderr, c.code, c.stderr)
		}
		if strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("xfsq %v: error is not one line: %q", c.args, r.stderr)
		}
	}
	if r := s.run("--json", "project", "add", "Bad"); r.code != 2 || !strings.HasPrefix(r.stderr, `{"error":"project name \"Bad\" is invalid`) {
		t.Errorf("--json error: exit %d %q", r.code, r.stderr)
	}
	noRoot := exec.Command(os.Getenv(envBinary), "report")
	noRoot.Env = append(os.Environ(), "XFSQ_ROOT=", "KERNEL_SANDBOX_ROOT=")
	out, err := noRoot.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "pass --root DIR or set XFSQ_ROOT") {
		t.Errorf("no root: %v %q", err, out)
	}
	uninit := newSandbox(t, t.TempDir(), "")
	if r := uninit.run("report"); r.code != 1 || !strings.Contains(r.stderr, "run xfsq init --root") {
		t.Errorf("uninitialised root: exit %d %q", r.code, r.stderr)
	}
	// KERNEL_SANDBOX_ROOT names the root too.
	cmd := exec.Command(os.Getenv(envBinary), "project", "list")
	cmd.Env = append(os.Environ(), "XFSQ_ROOT=", "KERNEL_SANDBOX_ROOT="+s.root, "XFSQ_HOST=test-host")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "omni") {
		t.Errorf("KERNEL_SANDBOX_ROOT: %v %q", err, out)
	}
}

func TestSettingsAndDefaultQuota(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := fallbackSandbox(t, dsn)
		var vals []struct{ Key, Value, Source string }
		s.json(&vals, "settings", "list")
		if len(vals) < 8 || vals[0].Key != "default_quota" || vals[0].Source != "default" {
			t.Fatalf("settings list: %+v", vals)
		}
		s.ok("project", "add", "a")
		if got := s.report()["a/workspace"].BytesHard; got != 50<<30 {
			t.Errorf("default workspace quota %d, want 50 GiB", got)
		}
		s.env = append(s.env, "KERNEL_STORAGE_DEFAULT_QUOTA_BYTES=1073741824")
		s.ok("project", "add", "b")
		if got := s.report()["b/workspace"].BytesHard; got != 1<<30 {
			t.Errorf("with KERNEL_STORAGE_DEFAULT_QUOTA_BYTES: %d, want 1 GiB", got)
		}
		if out := s.ok("settings", "set", "default_quota", "2GiB"); !strings.Contains(out, "default_quota = 2.0 GiB (was 1.0 GiB from env KERNEL_STORAGE_DEFAULT_QUOTA_BYTES)") {
			t.Errorf("settings set: %q", out)
		}
		s.ok("project", "add", "c")
		if got := s.report()["c/workspace"].BytesHard; got != 2<<30 {
			t.Errorf("stored default_quota must beat the environment: %d", got)
		}
		if out := s.ok("settings", "get", "cache_min_age"); strings.TrimSpace(out) != "1w" {
			t.Errorf("settings get cache_min_age = %q", out)
		}
		var evs []sandbox.Event
		s.json(&evs, "events", "--type", "settings.changed")
		if len(evs) != 1 {
			t.Errorf("settings.changed events: %d", len(evs))
		}
		if out := s.ok("settings", "set", "busy_grace", "0s", "--allow-zero"); !strings.Contains(out, "busy_grace = 0s") {
			t.Errorf("settings set busy_grace 0s --allow-zero: %q", out)
		}
		// The environment cannot say a zero is meant: it is not "unlimited".
		fresh := fallbackSandbox(t, "")
		fresh.env = append(fresh.env, "KERNEL_STORAGE_DEFAULT_QUOTA_BYTES=0")
		if r := fresh.run("project", "add", "d"); r.code == 0 || !strings.Contains(r.stderr, "KERNEL_STORAGE_DEFAULT_QUOTA_BYTES=0: new projects would get no workspace limit") {
			t.Errorf("KERNEL_STORAGE_DEFAULT_QUOTA_BYTES=0: exit %d %q; want it refused", r.code, r.stderr)
		}
	})
}

// An add killed at any step leaves nothing that doctor --fix, or the next
// add of the same name, does not clean up: no row, no directory, no ID.
func TestAddKilledAtEveryStep(t *testing.T) {
	for _, point := range sandbox.AddFaultPoints {
		for _, recovery := range []string{"doctor", "add-again"} {
			t.Run(point+"/"+recovery, func(t *testing.T) {
				s := fallbackSandbox(t, "")
				killed := *s
				killed.env = append(append([]string{}, s.env...), fault.Env+"="+point)
				if r := killed.run("project", "add", "omni"); !r.signaled {
					t.Fatalf("add did not die at %s: exit %d %q", point, r.code, r.stderr)
				}
				switch recovery {
				case "doctor":
					if r := s.run("doctor"); r.code != 1 || !strings.Contains(r.stdout, "interrupted-add") {
						t.Errorf("doctor after the crash: exit %d, %q; want exit 1 naming interrupted-add", r.code, r.stdout)
					}
					s.ok("doctor", "--fix")
					if out := s.ok("doctor"); !strings.Contains(out, "no drift") {
						t.Errorf("doctor after --fix: %q", out)
					}
					assertNothingLeft(t, s)
				case "add-again":
					s.ok("project", "add", "omni")
					rep := s.report()
					// 100000 is the inbound tree's, made by init.
					if rep["omni/workspace"].ProjectID != 100001 || rep["omni/cache"].ProjectID != 100002 {
						t.Errorf("IDs after recovery %d, %d: the crashed add's IDs leaked", rep["omni/workspace"].ProjectID, rep["omni/cache"].ProjectID)
					}
					if out := s.ok("doctor"); !strings.Contains(out, "no drift") {
						t.Errorf("doctor after the re-add: %q", out)
					}
				}
			})
		}
	}
}

// A removal killed at any step is finished by the next removal from
// another process: it takes the dead one's removal over, journalled, and
// leaves nothing behind: no row, no tree, no ID, one project.removed.
func TestRemoveKilledAtEveryStepIsTakenOver(t *testing.T) {
	for _, d := range storetest.Drivers() {
		for _, point := range sandbox.RemoveFaultPoints {
			t.Run(d.Name+"/"+point, func(t *testing.T) {
				s := fallbackSandbox(t, d.DSN(t))
				s.ok("project", "add", "omni")
				for _, d := range []string{"projects/omni", "cache/omni"} {
					treetest.Write(t, filepath.Join(s.root, d, "work/f"), 4096)
				}
				killed := *s
				killed.env = append(append([]string{}, s.env...), fault.Env+"="+point)
				if r := killed.run("project", "rm", "--purge", "omni"); !r.signaled {
					t.Fatalf("remove did not die at %s: exit %d %q", point, r.code, r.stderr)
				}
				s.ok("project", "rm", "--purge", "omni")
				var took []map[string]any
				s.json(&took, "events", "--type", "holder.taken_over")
				if len(took) != 1 || took[0]["what"] != "remove" || took[0]["name"] != "omni" {
					t.Errorf("holder.taken_over records: %v, want one of omni's removal", took)
				}
				var removed []map[string]any
				s.json(&removed, "events", "--type", "project.removed")
				if len(removed) != 1 {
					t.Errorf("project.removed records: %v, want one", removed)
				}
				assertNothingLeft(t, s)
			})
		}
	}
}

func assertNothingLeft(t *testing.T, s *testRoot) {
	t.Helper()
	st := s.store()
	if ps, _ := st.Projects(context.Background()); len(ps) != 0 {
		t.Errorf("project rows left: %+v", ps)
	}
	// The root's inbound tree, made by init, is all that may be left.
	if trees, _ := st.Trees(context.Background(), ""); len(trees) != 1 || trees[0].Project != sandbox.RootOwner {
		t.Errorf("tree rows left: %+v", trees)
	}
	if ids, _ := st.IDs(context.Background(), "fallback:"+rootID(t, s.root)); len(ids) != 1 || ids[0].Owner != sandbox.RootOwner+"/"+area.Inbound {
		t.Errorf("registered IDs left: %+v", ids)
	}
	for _, d := range []string{"projects", "cache"} {
		if entries, _ := os.ReadDir(filepath.Join(s.root, d)); len(entries) != 0 {
			t.Errorf("%s/ still holds %v", d, entries)
		}
	}
}

func TestConcurrentAdds(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := fallbackSandbox(t, dsn)
		const n = 6
		results := make([]result, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { results[i] = s.run("project", "add", fmt.Sprint("p", i)) })
		}
		wg.Wait()
		for i, r := range results {
			if r.code != 0 {
				t.Errorf("add p%d: exit %d %q", i, r.code, r.stderr)
			}
		}
		ids := map[uint32]string{}
		for key, row := range s.report() {
			if other, dup := ids[row.ProjectID]; dup {
				t.Errorf("%s and %s share ID %d", key, other, row.ProjectID)
			}
			ids[row.ProjectID] = key
		}
		if len(ids) != len(area.OfProject)*n+1 { // and the inbound tree's
			t.Errorf("%d distinct IDs, want %d", len(ids), len(area.OfProject)*n+1)
		}

		for i := range n {
			wg.Go(func() { results[i] = s.run("project", "add", "same") })
		}
		wg.Wait()
		wins := 0
		for _, r := range results {
			switch {
			case r.code == 0:
				wins++
			case r.code == 1 && (strings.Contains(r.stderr, "already exists") || strings.Contains(r.stderr, "being added")):
			default:
				t.Errorf("concurrent add of one name: exit %d %q", r.code, r.stderr)
			}
		}
		if wins != 1 {
			t.Errorf("%d concurrent adds of one name succeeded, want exactly 1", wins)
		}
		if out := s.ok("doctor"); !strings.Contains(out, "no drift") {
			t.Errorf("doctor after concurrent adds: %q", out)
		}
	})
}

func TestHelpTeaches(t *testing.T) {
	s := newSandbox(t, t.TempDir(), "")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"Exit codes: 0 success, 1 operation failed, 2 bad usage or input, 3 quota denied", "xfsq --root /srv/sandbox init", "KiB/MiB/GiB/TiB"}},
		{[]string{"project", "add", "--help"}, []string{"1-63 characters", "--bytes-hard", "--cache-bytes-hard", "default_quota"}},
		{[]string{"project", "check", "--help"}, []string{"3 for deny"}},
		{[]string{"--version"}, []string{"xfsq version ", " go1."}}, // which build an operator runs
	} {
		out := s.ok(c.args...)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("xfsq %v does not mention %q:\n%s", c.args, w, out)
			}
		}
	}
}

// A failure half-way (not a crash) rolls back what the add made.
func TestAddFailureRollsBack(t *testing.T) {
	s := fallbackSandbox(t, "")
	blocker := filepath.Join(s.root, "cache", "omni")
	if err := os.WriteFile(blocker, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := s.run("project", "add", "omni")
	if r.code != 1 || !strings.Contains(r.stderr, blocker+" exists and is not a directory") {
		t.Fatalf("add over a file: exit %d %q", r.code, r.stderr)
	}
	os.Remove(blocker)
	assertNothingLeft(t, s)
	s.ok("project", "add", "omni")
}

// doctor recreates a tree whose directory vanished, on the fallback too.
func TestDoctorMissingDirectory(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	os.RemoveAll(filepath.Join(s.root, "projects/omni"))
	if r := s.run("doctor"); r.code != 1 || !strings.Contains(r.stdout, "missing-directory omni workspace") {
		t.Errorf("doctor: exit %d %q", r.code, r.stdout)
	}
	s.ok("doctor", "--fix")
	for _, d := range []string{"projects/omni/uploads", "projects/omni/inbox"} {
		if _, err := os.Stat(filepath.Join(s.root, d)); err != nil {
			t.Errorf("doctor --fix did not recreate %s", d)
		}
	}
}

func TestFilesCommands(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni", "--bytes-hard", "200k")
	src := filepath.Join(t.TempDir(), "src")
	os.WriteFile(src, []byte("hello xfsq\n"), 0o644)
	if out := s.ok("files", "put", "omni", "docs/readme.txt", "--from", src); !strings.Contains(out, "wrote projects/omni/docs/readme.txt") {
		t.Errorf("put: %q", out)
	}
	if out := s.ok("files", "get", "omni", "docs/readme.txt"); out != "hello xfsq\n" {
		t.Errorf("get: %q", out)
	}
	var entries []struct{ Name, Type string }
	s.json(&entries, "files", "ls", "omni", "docs")
	if len(entries) != 1 || entries[0].Name != "readme.txt" || entries[0].Type != "file" {
		t.Errorf("ls: %+v", entries)
	}
	// From a pipe (unknown size), past the limit: refused, exit 3, nothing written.
	cmd := exec.Command(os.Getenv(envBinary), "--root", s.root, "files", "put", "omni", "docs/readme.txt")
	cmd.Env = append(os.Environ(), s.env...)
	cmd.Stdin = strings.NewReader(strings.Repeat("x", 400<<10))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(stderr.String(), "disk quota exceeded") || !strings.Contains(stderr.String(), "(bytes_hard)") {
		t.Errorf("put past the limit: %v %q; want exit 3 naming the limit", err, stderr.String())
	}
	if out := s.ok("files", "get", "omni", "docs/readme.txt"); out != "hello xfsq\n" {
		t.Errorf("a refused replacement changed the file to %q", out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"files", "get", "omni", "../other/x"}, `contains ".."`},
		{[]string{"files", "put", "omni", "/etc/passwd", "--from", src}, "absolute"},
		{[]string{"files", "get", "omni"}, "takes PROJECT PATH"},
	} {
		if r := s.run(c.args...); r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("xfsq %v: exit %d %q; want 2 mentioning %q", c.args, r.code, r.stderr, c.want)
		}
	}
	if out := s.ok("files", "rm", "omni", "docs", "--recursive"); !strings.Contains(out, "removed projects/omni/docs") {
		t.Errorf("rm: %q", out)
	}
	var evs []sandbox.Event
	s.json(&evs, "events", "--type", "storage.evicted")
	if len(evs) != 2 || !strings.Contains(string(evs[0].Payload), `"reason": "manual"`) {
		t.Errorf("rm journal: %+v", evs)
	}
	// Each removal outside a sweep has an id of its own, its pending and
	// done records share it: two removals of one path never settle each other.
	s.ok("files", "put", "omni", "docs/readme.txt", "--from", src)
	s.ok("files", "rm", "-r", "omni", "docs")
	s.json(&evs, "events", "--type", "storage.evicted")
	ids := map[string]int{}
	for _, ev := range evs {
		var rec struct {
			DeletionID string `json:"deletion_id"`
		}
		json.Unmarshal(ev.Payload, &rec)
		ids[rec.DeletionID]++
	}
	if len(ids) != 2 || ids[""] != 0 {
		t.Errorf("deletion ids of two removals of one path: %v; want two ids, two records each", ids)
	}
}

type snapshotJSON struct {
	Project       string `json:"project"`
	Area          string `json:"area"`
	SizeBytes     uint64 `json:"size_bytes"`
	ApparentBytes uint64 `json:"apparent_bytes"`
	Files         uint64 `json:"total_files"`
	Dirs          uint64 `json:"total_dirs"`
	Mtime         string `json:"newest_modified_at"`
	Partial       bool   `json:"partial"`
	Errors        uint64 `json:"unreadable_entries"`
	Error         string `json:"error"`
	Children      []struct {
		Path      string `json:"path"`
		SizeBytes uint64 `json:"size_bytes"`
		Children  []struct {
			Path string `json:"path"`
		} `json:"children"`
	} `json:"children"`
	TopFiles []struct {
		Path      string `json:"path"`
		SizeBytes uint64 `json:"size_bytes"`
	} `json:"top_files"`
}

func TestSnapshotTopAndGrowth(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	s.ok("project", "add", "other")
	ws := filepath.Join(s.root, "projects/omni")
	os.MkdirAll(filepath.Join(ws, "node_modules/pkg/lib"), 0o755)
	os.WriteFile(filepath.Join(ws, "node_modules/pkg/lib/big.js"), make([]byte, 3<<20), 0o644)
	os.WriteFile(filepath.Join(ws, "notes.txt"), make([]byte, 10<<10), 0o644)

	var snaps []snapshotJSON
	s.json(&snaps, "snapshot", "omni", "--area", "workspace", "--depth", "2", "--top", "3")
	if len(snaps) != 1 {
		t.Fatalf("snapshot of one tree: %d entries", len(snaps))
	}
	sn := snaps[0]
	if sn.Project != "omni" || sn.Area != "workspace" || sn.SizeBytes < 3<<20 || sn.Files != 2 || sn.Dirs != 6 || sn.Partial || sn.Mtime == "" {
		t.Errorf("snapshot totals: %+v", sn)
	}
	if len(sn.Children) != 3 || sn.Children[0].Path != "node_modules" || len(sn.Children[0].Children) != 1 || sn.Children[0].Children[0].Path != "node_modules/pkg" {
		t.Errorf("children (top 3, depth 2): %+v", sn.Children)
	}
	if len(sn.TopFiles) != 2 || sn.TopFiles[0].Path != "node_modules/pkg/lib/big.js" {
		t.Errorf("top files: %+v", sn.TopFiles)
	}

	// Growth: plant an older snapshot of 1 MiB 25 hours ago.
	st := s.store()
	err := st.InTx(context.Background(), func(tx *store.Tx) error {
		return tx.AddSnapshot(context.Background(), store.Snapshot{Project: "omni", Area: "workspace",
			At: time.Now().Add(-25 * time.Hour), SizeBytes: 1 << 20, KernelBytes: -1}, []byte("{}"), 35*24*time.Hour)
	})
	if err != nil {
		t.Fatal(err)
	}
	s.ok("snapshot", "omni")
	var rows []struct {
		Project        string  `json:"project"`
		Area           string  `json:"area"`
		Growth24h      *int64  `json:"growth_24h_bytes"`
		Growth7d       *int64  `json:"growth_7d_bytes"`
		LastActivityAt *string `json:"last_activity_at"`
		UsedBytes      uint64  `json:"used_bytes"`
	}
	s.json(&rows, "report")
	for _, r := range rows {
		switch r.Project + "/" + r.Area {
		case "omni/workspace":
			// The latest walk found just over 3 MiB; 25 h ago there was 1 MiB.
			if r.Growth24h == nil || *r.Growth24h < 2<<20 || *r.Growth24h > 3<<20 {
				t.Errorf("growth_24h %v, want the latest snapshot minus the 1 MiB of 25 h ago", r.Growth24h)
			}
			if r.Growth7d != nil {
				t.Errorf("growth_7d %v with one day of history, want null", *r.Growth7d)
			}
			if r.LastActivityAt == nil {
				t.Error("last_activity_at missing after a snapshot")
			}
		case "other/workspace":
			if r.Growth24h != nil || r.LastActivityAt != nil {
				t.Errorf("a never-snapshotted tree has growth %v, activity %v", r.Growth24h, r.LastActivityAt)
			}
		}
	}
	if out := s.ok("report"); !strings.Contains(out, "24H") || !strings.Contains(out, "+") {
		t.Errorf("report without growth columns:\n%s", out)
	}
	// A walk that ran out of budget saw only the top of the tree: growth
	// stays between complete walks instead of turning into a 3 MiB loss.
	var partial []snapshotJSON
	s.json(&partial, "snapshot", "omni", "--area", "workspace", "--budget", "1ns")
	if len(partial) != 1 || !partial[0].Partial || partial[0].SizeBytes >= 1<<20 {
		t.Fatalf("a 1ns budget: %+v", partial)
	}
	s.json(&rows, "report")
	for _, r := range rows {
		if r.Project+"/"+r.Area != "omni/workspace" {
			continue
		}
		if r.Growth24h == nil || *r.Growth24h < 2<<20 || *r.Growth24h > 3<<20 {
			t.Errorf("after a partial walk: growth_24h %s, want the complete walks' (2-3 MiB)", fmtPtr(r.Growth24h))
		}
		if r.LastActivityAt == nil {
			t.Error("after a partial walk: no last_activity_at")
		}
	}

	out := s.ok("top", "omni", "--depth", "3")
	lines := strings.Split(out, "\n")[1:] // after the line naming the tree and the walk's time
	if !strings.Contains(lines[1], "100.0%") || !strings.Contains(lines[2], "node_modules") || !strings.Contains(out, "node_modules/pkg/lib/big.js") {
		t.Errorf("top, largest first with shares:\n%s", out)
	}
	// Each row's newest mtime: node_modules' is big.js's.
	big, _ := os.Stat(filepath.Join(ws, "node_modules/pkg/lib/big.js"))
	if newest := big.ModTime().Local().Format(textout.TimeLayout); !strings.Contains(lines[0], "NEWEST") || !strings.Contains(lines[2], newest) {
		t.Errorf("top without each row's newest mtime (node_modules: %s):\n%s", newest, out)
	}
	if r := s.run("top", "omni", "--depth", "9"); r.code != 2 {
		t.Errorf("top --depth 9: exit %d %q", r.code, r.stderr)
	}
	if r := s.run("snapshot"); r.code != 2 || !strings.Contains(r.stderr, "PROJECT names or --all") {
		t.Errorf("snapshot without targets: exit %d %q", r.code, r.stderr)
	}
}

func fmtPtr[T any](p *T) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

// The documented form puts --json after the command and its arguments,
// and --root may come anywhere too: xfsq's own flags are read wherever
// they are.
func TestGlobalFlagsAfterTheCommand(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	var snaps []snapshotJSON
	out := s.ok("snapshot", "omni", "--area", "workspace", "--json")
	if err := json.Unmarshal([]byte(out), &snaps); err != nil || len(snaps) != 1 || snaps[0].Project != "omni" {
		t.Errorf("snapshot omni --json: %v\n%s", err, out)
	}
	var rows []reportRow
	if out := s.ok("report", "--json"); json.Unmarshal([]byte(out), &rows) != nil || len(rows) != len(area.OfProject)+1 { // and the inbound tree
		t.Errorf("report --json: %s", out)
	}
	// --root only after the command (the sandbox's run puts one first).
	cmd := exec.Command(os.Getenv(envBinary), "project", "list", "--root", s.root, "--json")
	cmd.Env = append(os.Environ(), "XFSQ_HOST=test-host", "XFSQ_ROOT=", "KERNEL_SANDBOX_ROOT=")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), `"omni"`) {
		t.Errorf("project list --root ROOT --json: %v\n%s", err, out)
	}
	if res := s.run("snapshot", "omni", "--bogus", "--json"); res.code != 2 || !strings.HasPrefix(res.stderr, `{"error":"flag provided but not defined: -bogus`) {
		t.Errorf("an unknown flag after the command: exit %d, stderr %s", res.code, res.stderr)
	}
}

// The scheduled pass journals one storage.snapshot event, and one tree that
// cannot be walked is reported while the others go on.
func TestScheduledSnapshotPass(t *testing.T) {
	s := fallbackSandbox(t, "")
	for _, p := range []string{"a", "b", "c"} {
		s.ok("project", "add", p)
	}
	os.RemoveAll(filepath.Join(s.root, "projects/b")) // b's workspace cannot be walked
	var snaps []snapshotJSON
	r := s.run("--json", "snapshot", "--all")
	if r.code != 1 || json.Unmarshal([]byte(r.stdout), &snaps) != nil {
		t.Fatalf("snapshot --all with a broken tree: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	failed := 0
	for _, sn := range snaps {
		if sn.Error != "" {
			failed++
			if sn.Project != "b" || sn.Area != "workspace" {
				t.Errorf("unexpected failure: %+v", sn)
			}
		}
	}
	if len(snaps) != 3*len(area.OfProject)+1 || failed != 1 { // and the inbound tree
		t.Errorf("%d trees, %d failed; want %d with only b/workspace failed", len(snaps), failed, 3*len(area.OfProject)+1)
	}
	var evs []sandbox.Event
	s.json(&evs, "events", "--type", "storage.snapshot")
	if len(evs) != 1 {
		t.Fatalf("%d storage.snapshot events for one pass, want 1", len(evs))
	}
	var pass struct {
		Trees []struct {
			Project, Area, Error string
		} `json:"trees"`
		FreeBytes uint64 `json:"free_bytes"`
		Failed    int    `json:"failed"`
	}
	json.Unmarshal(evs[0].Payload, &pass)
	if len(pass.Trees) != 3*len(area.OfProject)+1 || pass.Failed != 1 || pass.FreeBytes == 0 {
		t.Errorf("storage.snapshot payload %s", evs[0].Payload)
	}
	s.ok("snapshot", "a") // a snapshot of named projects is not a scheduled pass
	if s.json(&evs, "events", "--type", "storage.snapshot"); len(evs) != 1 {
		t.Errorf("a named snapshot journalled a pass: %d events", len(evs))
	}
}

// Progress shows on a terminal and never in a pipe or with --json.
func TestSnapshotProgressOnlyOnATerminal(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	ws := filepath.Join(s.root, "projects/omni")
	for i := range 40 {
		d := filepath.Join(ws, fmt.Sprint("d", i))
		os.Mkdir(d, 0o755)
		for j := range 500 {
			os.WriteFile(filepath.Join(d, fmt.Sprint(j)), nil, 0o644)
		}
	}
	if r := s.run("snapshot", "omni"); strings.Contains(r.stderr, "files/s") {
		t.Errorf("progress printed into a pipe: %q", r.stderr)
	}
	if _, err := exec.LookPath("script"); err != nil {
		t.Fatal("script (util-linux) is needed to give the command a terminal")
	}
	// script(1) runs the command on a pseudo-terminal.
	cmdline := fmt.Sprintf("XFSQ_HOST=test-host %s --root %s snapshot omni", os.Getenv(envBinary), s.root)
	var out []byte
	var err error
	out, err = exec.Command("script", "-qec", cmdline, "/dev/null").CombinedOutput()
	if !strings.Contains(string(out), "20000 files") || !strings.Contains(string(out), "files/s") {
		t.Errorf("no progress line on a terminal (%v):\n%q", err, out)
	}
	jsonOnTTY := fmt.Sprintf("XFSQ_HOST=test-host %s --root %s --json snapshot omni", os.Getenv(envBinary), s.root)
	if out, _ := exec.Command("script", "-qec", jsonOnTTY, "/dev/null").CombinedOutput(); strings.Contains(string(out), "files/s") {
		t.Errorf("progress printed on a terminal with --json:\n%q", out)
	}
}

func TestLeases(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	s.ok("lease", "acquire", "omni", "run-42", "--ttl", "2h")
	s.ok("lease", "acquire", "omni", "short", "--ttl", "1s")
	time.Sleep(1100 * time.Millisecond)
	var ls []sandbox.LeaseStatus
	s.json(&ls, "lease", "list")
	if len(ls) != 2 || ls[0].Run != "run-42" || !ls[0].Active || ls[1].Run != "short" || ls[1].Active {
		t.Errorf("lease list: %+v; want run-42 held and short lapsed", ls)
	}
	if until := time.Until(ls[0].ExpiresAt); until < 119*time.Minute || until > 121*time.Minute {
		t.Errorf("a 2h lease ends in %v", until)
	}
	s.ok("lease", "release", "omni", "run-42")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"lease", "release", "omni", "run-42"}, 1, `no lease for run "run-42"`},
		{[]string{"lease", "acquire", "ghost", "r"}, 1, `project "ghost" not found`},
		{[]string{"lease", "acquire", "omni", "../x"}, 2, "run name"},
		{[]string{"lease", "acquire", "omni", "r", "--ttl", "30d"}, 2, "at most 1w"},
		{[]string{"lease", "acquire", "omni", "r", "--ttl", "soon"}, 2, "not a duration"},
		{[]string{"lease", "acquire", "omni"}, 2, "takes PROJECT RUN"},
	} {
		if r := s.run(c.args...); r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("xfsq %v: exit %d %q; want %d containing %q", c.args, r.code, r.stderr, c.code, c.want)
		}
	}
}

// On the fallback, report never walks, however old a tree's last walk: it
// says when that walk began (the hourly pass walks again); --refresh walks
// every tree now.
func TestFallbackReportWalksOnlyWhenAsked(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "old")
	s.ok("project", "add", "fresh")
	first := s.report()
	for _, name := range []string{"old", "fresh"} {
		os.WriteFile(filepath.Join(s.root, "projects", name, "data"), make([]byte, 300<<10), 0o644)
	}
	st := s.store()
	aged := time.Now().Add(-61 * time.Minute)
	if err := st.SetBaseline(t.Context(), store.TreeKey{Project: "old", Area: "workspace"},
		quota.Usage{Bytes: first["old/workspace"].UsedBytes, Inodes: first["old/workspace"].UsedInodes}, store.WalkAt(aged), store.WalkSeen{}); err != nil {
		t.Fatal(err)
	}
	rep := s.report()
	if old := rep["old/workspace"]; old.UsedBytes != first["old/workspace"].UsedBytes || old.UsageAsOf == nil || time.Since(*old.UsageAsOf) < time.Hour {
		t.Errorf("report walked a tree walked 61 minutes ago, or lost when: %+v", old)
	}
	if fresh := rep["fresh/workspace"]; fresh.UsedBytes != first["fresh/workspace"].UsedBytes || !fresh.UsageAsOf.Equal(*first["fresh/workspace"].UsageAsOf) {
		t.Errorf("a tree walked just now was walked again: %+v, first %+v", fresh, first["fresh/workspace"])
	}
	var refreshed []reportRow
	s.json(&refreshed, "report", "--refresh")
	for _, r := range refreshed {
		if r.Area == "workspace" && (r.UsedBytes < 300<<10 || time.Since(*r.UsageAsOf) > time.Minute) {
			t.Errorf("report --refresh did not walk %s: %+v", r.Project, r)
		}
	}
	if out := s.ok("report"); !strings.Contains(out, "last walk plus the writes made through xfsq") || !strings.Contains(out, "oldest walk here") {
		t.Errorf("the fallback report does not say how old its figures are:\n%s", out)
	}
}

// A deletion left pending by a process that died is drift: doctor names it,
// and --fix settles it in the journal as the next sweep would.
func TestDoctorInterruptedDeletion(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	os.MkdirAll(filepath.Join(s.root, "cache/omni/half"), 0o755)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	rec := journal.Evicted{SweepID: "sw-1", Area: "cache", Path: "cache/omni/half", State: "pending",
		Policy: "cache_quota_per_project", Holder: fmt.Sprintf("%d@%s", dead.Process.Pid, host)}
	st := s.store()
	if err := st.InTx(t.Context(), func(tx *store.Tx) error { return tx.AppendEvent(t.Context(), "omni", "t", rec) }); err != nil {
		t.Fatal(err)
	}
	if r := s.run("doctor"); r.code != 1 || !strings.Contains(r.stdout, "interrupted-deletion omni cache cache/omni/half") {
		t.Errorf("doctor: exit %d %q", r.code, r.stdout)
	}
	if out := s.ok("doctor", "--fix"); !strings.Contains(out, "fixed: interrupted-deletion") {
		t.Errorf("doctor --fix: %q", out)
	}
	if pending, err := st.PendingEvictions(t.Context()); err != nil || len(pending) != 0 {
		t.Errorf("pending after doctor --fix: %+v %v", pending, err)
	}
	var evs []map[string]any
	s.json(&evs, "events", "--type", "storage.evicted")
	if len(evs) != 2 || evs[0]["state"] != "failed" || evs[0]["path"] != "cache/omni/half" {
		t.Errorf("journal after the fix: %v; want the deletion marked failed (the entry is still there)", evs)
	}
	s.ok("doctor") // no drift left
}

// Snapshot totals older than snapshot_retention are dropped at the next
// snapshot of the tree.
func TestSnapshotRetentionSetting(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	if r := s.run("settings", "set", "snapshot_retention", "3d"); r.code != 2 || !strings.Contains(r.stderr, "use at least 8d") {
		t.Errorf("a retention too short for growth_7d: exit %d %q", r.code, r.stderr)
	}
	s.ok("settings", "set", "snapshot_retention", "9d")
	st := s.store()
	k := store.TreeKey{Project: "omni", Area: "workspace"}
	for _, days := range []int{10, 8} {
		if err := st.InTx(t.Context(), func(tx *store.Tx) error {
			return tx.AddSnapshot(t.Context(), store.Snapshot{Project: "omni", Area: "workspace",
				At: time.Now().Add(-time.Duration(days) * 24 * time.Hour), KernelBytes: -1}, []byte("{}"), 365*24*time.Hour)
		}); err != nil {
			t.Fatal(err)
		}
	}
	// Growth runs back from the latest snapshot (8 days old here).
	if _, ok, _ := st.Growth(t.Context(), k, 24*time.Hour); !ok {
		t.Fatal("growth over the day before the 8-day-old snapshot is unknown")
	}
	s.ok("snapshot", "omni")
	if _, ok, _ := st.Growth(t.Context(), k, 9*24*time.Hour+time.Hour); ok {
		t.Error("the 10-day-old snapshot outlived a 9-day snapshot_retention")
	}
	if _, ok, _ := st.Growth(t.Context(), k, 7*24*time.Hour); !ok {
		t.Error("the 8-day-old snapshot was dropped by a 9-day snapshot_retention")
	}
}

// A store that has never recorded anything for this host — zero-length,
// newly created, or another one — on a root that holds project trees is
// refused with what to do, instead of being used as if the root were fresh.
func TestBlankStoreOnARootWithTrees(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			s := fallbackSandbox(t, d.DSN(t))
			s.ok("project", "add", "omni")
			other := newSandbox(t, s.root, d.DSN(t)) // a new, empty database
			// A SQLite store is made by init alone: until then --db names none.
			made := d.Name != "sqlite"
			for _, args := range [][]string{{"project", "list"}, {"init"}, {"project", "add", "beta"}, {"sweep", "--all"}} {
				made = made || args[0] == "init"
				if !made {
					if r := other.run(args...); r.code != 2 || !strings.Contains(r.stderr, "does not exist") {
						t.Errorf("xfsq %v on a store that does not exist: exit %d %q; want it refused", args, r.code, r.stderr)
					}
					continue
				}
				if r := other.run(args...); r.code != 1 || !strings.Contains(r.stderr, "has no record of this root") || !strings.Contains(r.stderr, "omni") {
					t.Errorf("xfsq %v on a new store: exit %d %q; want it refused naming the trees", args, r.code, r.stderr)
				}
			}
			s.ok("project", "list") // the root's own store still works
		})
	}
	t.Run("zero-length", func(t *testing.T) {
		s := fallbackSandbox(t, "")
		s.ok("project", "add", "omni")
		db := filepath.Join(s.root, ".xfsq", "xfsq.db")
		os.Remove(db + "-wal")
		os.Remove(db + "-shm")
		if err := os.Truncate(db, 0); err != nil {
			t.Fatal(err)
		}
		if r := s.run("report"); r.code != 1 || !strings.Contains(r.stderr, "restore the database from a backup") {
			t.Errorf("report on a zero-length store: exit %d %q; want it refused with what to do", r.code, r.stderr)
		}
	})
	// A root that held trees before xfsq was ever initialised on it (no
	// .xfsq/) is adopted by its first init, and recorded so.
	t.Run("adopted by the first init", func(t *testing.T) {
		s := newSandbox(t, t.TempDir(), "")
		if err := os.MkdirAll(filepath.Join(s.root, "projects", "legacy"), 0o755); err != nil {
			t.Fatal(err)
		}
		s.ok("init")
		s.ok("project", "list")
		s.ok("init") // again: still this root's store
		var evs []sandbox.Event
		s.json(&evs, "events", "--type", string(journal.TypeRootInitialised))
		if len(evs) != 1 || !strings.Contains(string(evs[0].Payload), `"legacy"`) {
			t.Errorf("root.initialised: %+v; want one record naming the adopted tree", evs)
		}
	})
	// A fresh root, and a root whose projects were all removed (the journal
	// remembers them), are not refused.
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "gone")
	s.ok("project", "rm", "gone")
	s.ok("project", "list")
}

// A PostgreSQL DSN in any form names PostgreSQL: never a SQLite file named
// after it (password and all) used as an empty store with exit 0; and the
// password never reaches the output.
func TestDBFlagPostgresForms(t *testing.T) {
	s := fallbackSandbox(t, "")
	cwd := t.TempDir()
	for _, dsn := range []string{
		"POSTGRES://xfsq:secret@127.0.0.1:1/x?sslmode=disable",
		"host=127.0.0.1 port=1 user=xfsq password=secret dbname=x sslmode=disable",
		"postgres://xfsq@127.0.0.1:1/x?sslmode=disable&password=secret",
		"postgres://xfsq:sec%ret@127.0.0.1:1/x",
	} {
		cmd := exec.Command(os.Getenv(envBinary), "--root", s.root, "--db", dsn, "project", "list")
		cmd.Env, cmd.Dir = append(os.Environ(), s.env...), cwd
		out, err := cmd.CombinedOutput()
		if err == nil || strings.Contains(string(out), "secret") || strings.Contains(string(out), "sec%ret") {
			t.Errorf("--db %q: %v %q; want a failure that does not show the password", dsn, err, out)
		}
	}
	if entries, _ := os.ReadDir(cwd); len(entries) > 0 {
		t.Errorf("PostgreSQL DSNs were taken for SQLite paths: %v", entries)
	}
}

// rootID is the identity init gave root (its fallback ID registry's key).
func rootID(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ".xfsq", "root-id"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}
