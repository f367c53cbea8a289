package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// A bad environment value shows in settings list beside every other
// setting, and fails the command with exit 2 naming it (issue 17 item 10).
func TestSettingsListShowsABadEnvironmentValue(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.env = append(s.env, "KERNEL_STORAGE_DEFAULT_QUOTA_BYTES=lots")
	r := s.run("settings", "list")
	if r.code != 2 || !strings.Contains(r.stderr, `KERNEL_STORAGE_DEFAULT_QUOTA_BYTES: default_quota: "lots" is not a size`) {
		t.Errorf("settings list: exit %d, stderr %q; want 2 naming the variable", r.code, r.stderr)
	}
	for _, want := range []string{"default_quota", "busy_grace", "scratch_ttl"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("settings list does not show %s:\n%s", want, r.stdout)
		}
	}
	r = s.run("--json", "settings", "list")
	var vals []struct{ Key, Value, Problem string }
	if err := json.Unmarshal([]byte(r.stdout), &vals); err != nil || r.code != 2 || !strings.HasPrefix(r.stderr, `{"error":`) {
		t.Fatalf("settings list --json: exit %d, %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	if vals[0].Key != "default_quota" || !strings.Contains(vals[0].Problem, "not a size") || len(vals) < 10 {
		t.Errorf("settings list --json: %+v", vals[:2])
	}
	if r := s.run("settings", "get", "default_quota"); r.code != 2 {
		t.Errorf("settings get of a bad environment value: exit %d %q, want 2", r.code, r.stderr)
	}
}

// settings reset forgets the stored value and journals it.
func TestSettingsReset(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("settings", "set", "busy_grace", "2d")
	if out := s.ok("settings", "reset", "busy_grace"); !strings.Contains(out, "busy_grace = 1d from default (was 2d from stored)") {
		t.Errorf("reset: %q", out)
	}
	var v struct{ Value, Source string }
	s.json(&v, "settings", "get", "busy_grace")
	if v.Value != "1d" || v.Source != "default" {
		t.Errorf("after reset: %+v", v)
	}
	var evs []struct {
		Payload map[string]string `json:"payload"`
	}
	s.json(&evs, "events", "--type", "settings.changed", "--limit", "1")
	if len(evs) != 1 || evs[0].Payload["old"] != "2d" || evs[0].Payload["new"] != "1d" || evs[0].Payload["reset"] != "true" {
		t.Errorf("journal of the reset: %+v", evs)
	}
	if r := s.run("settings", "reset", "nosuch"); r.code != 2 || !strings.Contains(r.stderr, `unknown setting "nosuch"`) {
		t.Errorf("reset of an unknown key: exit %d %q", r.code, r.stderr)
	}
}

// Limits below what a tree already holds are set, with a warning saying
// what follows; 0 is "no limit", as xfs_quota takes it, and says so.
func TestLimitsBelowUsageWarn(t *testing.T) {
	s := fallbackSandbox(t, "")
	r := s.run("project", "add", "omni", "--bytes-hard", "8k")
	if r.code != 0 || !strings.Contains(r.stderr, "warning: omni workspace already holds 12.0 KiB, at or over its new hard byte limit of 8.0 KiB") {
		t.Errorf("add below usage: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := s.run("project", "set", "omni", "--bytes-hard", "1m"); r.code != 0 || r.stderr != "" {
		t.Errorf("set above usage: exit %d, stderr %q; want no warning", r.code, r.stderr)
	}
	if r := s.run("project", "set", "omni", "--inodes-soft", "2"); r.code != 0 || !strings.Contains(r.stderr, "soft file-count limit of 2") {
		t.Errorf("set below usage: exit %d, stderr %q", r.code, r.stderr)
	}
	if out := s.ok("project", "add", "--help"); !strings.Contains(out, "0: no limit") {
		t.Errorf("project add --help does not say what 0 means:\n%s", out)
	}
	s.ok("project", "add", "free", "--bytes-hard", "0")
	if row := s.report()["free/workspace"]; row.BytesHard != 0 {
		t.Errorf("--bytes-hard 0: hard %d, want 0 (no limit)", row.BytesHard)
	}
}

// A renewal never shortens a lease, and says so.
func TestLeaseRenewalNeverShortens(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	var long, short struct {
		ExpiresAt  time.Time `json:"expires_at"`
		KeptLonger bool      `json:"kept_longer"`
	}
	s.json(&long, "lease", "acquire", "omni", "run-1", "--ttl", "5h")
	s.json(&short, "lease", "acquire", "omni", "run-1", "--ttl", "1h")
	if !short.ExpiresAt.Equal(long.ExpiresAt) || !short.KeptLonger {
		t.Errorf("renewal for 1h after 5h: %+v, want the 5h expiry %v kept", short, long.ExpiresAt)
	}
	if out := s.ok("lease", "acquire", "omni", "run-1", "--ttl", "1h"); !strings.Contains(out, "never shortens") {
		t.Errorf("text of a renewal kept longer: %q", out)
	}
	var leases []struct {
		ExpiresAt time.Time `json:"expires_at"`
	}
	s.json(&leases, "lease", "list")
	if len(leases) != 1 || !leases[0].ExpiresAt.Equal(long.ExpiresAt) {
		t.Errorf("lease list: %+v", leases)
	}
	s.ok("lease", "release", "omni", "run-1")
	short.KeptLonger = false
	s.json(&short, "lease", "acquire", "omni", "run-1", "--ttl", "1h")
	if short.KeptLonger || short.ExpiresAt.After(time.Now().Add(61*time.Minute)) {
		t.Errorf("after release, 1h: %+v", short)
	}
}

// Help says what --id-range costs: one ID per tree, three trees a project.
func TestIDRangeHelp(t *testing.T) {
	s := fallbackSandbox(t, "")
	if out := s.ok("--help"); !strings.Contains(out, "a project needs one ID per tree") ||
		!strings.Contains(out, fmt.Sprintf("N/%d projects", len(area.OfProject))) {
		t.Errorf("xfsq --help does not explain --id-range:\n%s", out)
	}
}

// Every failure is one line; with --json it is {"error": …}, unknown
// commands and parse errors included; exit codes follow docs/commands.md.
func TestErrorsAndExitCodes(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"nosuch"}, 2},
		{[]string{"project", "nosuch"}, 2},
		{[]string{"project"}, 2},
		{[]string{"help", "nosuch"}, 2},
		{[]string{"report", "--bogus"}, 2},
		{[]string{"project", "add", "x", "--bytes-hard"}, 2},
		{[]string{"files", "put", "omni", "f", "--from", dir}, 2},
		{[]string{"files", "put", "omni", "f", "--from", filepath.Join(dir, "nope")}, 2},
		{[]string{"files", "get", "omni", "../x"}, 2},
		{[]string{"project", "show", "nope"}, 1},
		{[]string{"lease", "release", "omni", "run-9"}, 1},
		{[]string{"--id-range", "9-1", "project", "list"}, 2},
		{[]string{"settings", "set", "busy_grace", "soon"}, 2},
	} {
		r := s.run(append([]string{"--json"}, tc.args...)...)
		var e struct{ Error string }
		if r.code != tc.code || json.Unmarshal([]byte(r.stderr), &e) != nil || e.Error == "" || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("xfsq --json %s: exit %d, stderr %q; want exit %d and one {\"error\": …} line", strings.Join(tc.args, " "), r.code, r.stderr, tc.code)
		}
		if len(tc.args) == 1 && tc.args[0] == "project" {
			continue // without --json: its help, on stdout
		}
		if r := s.run(tc.args...); r.code != tc.code || !strings.HasPrefix(r.stderr, "xfsq: ") || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("xfsq %s: exit %d, stderr %q; want exit %d and one line", strings.Join(tc.args, " "), r.code, r.stderr, tc.code)
		}
	}
}

// A project may be called h or help: they are names, not help requests.
func TestProjectsNamedLikeHelp(t *testing.T) {
	s := fallbackSandbox(t, "")
	for _, name := range []string{"h", "help"} {
		if out := s.ok("project", "add", name); !strings.Contains(out, "project: "+name+" (ready") {
			t.Errorf("project add %s: %q", name, out)
		}
		if _, err := os.Stat(filepath.Join(s.root, "projects", name, "uploads")); err != nil {
			t.Errorf("project add %s made no tree: %v", name, err)
		}
		s.ok("project", "show", name)
		s.ok("lease", "acquire", name, "help")
	}
	// Help itself still works.
	if out := s.ok("project", "help", "add"); !strings.Contains(out, "register a project") {
		t.Errorf("project help add: %q", out)
	}
	if out := s.ok("project", "add", "--help"); !strings.Contains(out, "register a project") {
		t.Errorf("project add --help: %q", out)
	}
}

// files rm needs --recursive for a directory; uploads/ and inbox/ are
// emptied, never removed; doctor finds one gone and --fix makes it again
// (issue 17 item 2).
func TestFilesRmDirectoriesAndTheSkeleton(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	src := filepath.Join(t.TempDir(), "src")
	os.WriteFile(src, []byte("x"), 0o644)
	for _, p := range []string{"d/a", "d/b", "uploads/u1", "uploads/sub/u2", "inbox/i1"} {
		s.ok("files", "put", "omni", p, "--from", src)
	}
	tree := filepath.Join(s.root, "projects/omni")
	r := s.run("files", "rm", "omni", "d")
	if r.code != 2 || !strings.Contains(r.stderr, `path "d" refused: it is a directory`) || !strings.Contains(r.stderr, "--recursive") {
		t.Errorf("files rm of a directory: exit %d %q; want 2 asking for --recursive", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(tree, "d/a")); err != nil {
		t.Errorf("a refused rm removed something: %v", err)
	}
	s.ok("files", "rm", "omni", "d/a") // a file needs nothing
	s.ok("files", "rm", "omni", "d", "--recursive")
	if _, err := os.Stat(filepath.Join(tree, "d")); !os.IsNotExist(err) {
		t.Errorf("d after rm --recursive: %v", err)
	}
	for _, skel := range []string{"uploads", "inbox"} {
		if r := s.run("files", "rm", "omni", skel); r.code != 2 || !strings.Contains(r.stderr, "emptied, never removed") {
			t.Errorf("files rm %s: exit %d %q", skel, r.code, r.stderr)
		}
		var res struct {
			Path    string `json:"path"`
			Entries int    `json:"removed_entries"`
		}
		s.json(&res, "files", "rm", "-r", "omni", skel+"/")
		entries, err := os.ReadDir(filepath.Join(tree, skel))
		if err != nil || len(entries) != 0 || res.Entries == 0 || res.Path != "projects/omni/"+skel {
			t.Errorf("files rm -r %s: %+v; left %v %v; want it emptied and kept", skel, res, entries, err)
		}
	}
	os.Remove(filepath.Join(tree, "inbox"))
	if r := s.run("doctor"); r.code != 1 || !strings.Contains(r.stdout, "missing-directory omni workspace projects/omni/inbox") {
		t.Errorf("doctor with inbox gone: exit %d %q", r.code, r.stdout)
	}
	s.ok("doctor", "--fix")
	if fi, err := os.Stat(filepath.Join(tree, "inbox")); err != nil || !fi.IsDir() {
		t.Errorf("doctor --fix did not make inbox again: %v", err)
	}
	if out := s.ok("doctor"); !strings.Contains(out, "no drift") {
		t.Errorf("doctor after the fix: %q", out)
	}
}

// files ls of a file lists it, as ls does; no message shows a descriptor
// path or a SQLite result code; a user who may not open the store is told
// who may (issue 17 item 9).
func TestFilesLsFileAndPlainMessages(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	src := filepath.Join(t.TempDir(), "src")
	os.WriteFile(src, []byte("hello"), 0o644)
	s.ok("files", "put", "omni", "d/f.txt", "--from", src)
	var entries []struct{ Name, Type string }
	s.json(&entries, "files", "ls", "omni", "d/f.txt")
	if len(entries) != 1 || entries[0].Name != "f.txt" || entries[0].Type != "file" {
		t.Errorf("files ls of a file: %+v", entries)
	}
	if out := s.ok("files", "ls", "omni", "d/f.txt"); !strings.Contains(out, "f.txt") || !strings.Contains(out, "5 B") {
		t.Errorf("files ls of a file, text: %q", out)
	}
	for _, args := range [][]string{
		{"files", "ls", "omni", "d/f.txt/x"},
		{"files", "get", "omni", "d/f.txt/x"},
		{"files", "rm", "omni", "d/f.txt/x"},
		{"files", "put", "omni", "d/f.txt/x", "--from", src},
	} {
		r := s.run(args...)
		if r.code == 0 || strings.Contains(r.stderr, "/proc/self/fd") || !strings.Contains(r.stderr, "d/f.txt") {
			t.Errorf("xfsq %s: exit %d %q; want a failure naming the path, never a descriptor's", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if os.Getuid() != 0 {
		prereq.Missing(t, "needs root, to run xfsq as another user: run the tests as root")
	}
	os.Chmod(filepath.Dir(s.root), 0o755) // t.TempDir made both the test's alone
	os.Chmod(s.root, 0o755)
	os.Chmod(filepath.Dir(os.Getenv(envBinary)), 0o755) // MkdirTemp made it the test's alone
	r := s.runAs(65534, "report")
	if r.code != 1 || !strings.Contains(r.stderr, "the store "+filepath.Join(s.root, ".xfsq/xfsq.db")+" needs root to open") || strings.Contains(r.stderr, "(14)") {
		t.Errorf("report as nobody: exit %d %q; want 1 saying the store needs root", r.code, r.stderr)
	}
}

// init --backend auto|xfs|fallback: xfs fails loudly with the reason and
// the fix, and every JSON output gives the backend as the object of docs/design/README.md#output-conventions
// (issue 17 item 4).
func TestInitBackendChoice(t *testing.T) {
	s := newSandbox(t, t.TempDir(), "")
	r := s.run("init", "--backend", "xfs")
	if r.code != 1 || !strings.Contains(r.stderr, "is not XFS") || !strings.Contains(r.stderr, "prjquota") ||
		!strings.Contains(r.stderr, "--backend fallback") {
		t.Errorf("init --backend xfs on a non-XFS root: exit %d %q; want 1 with the reason and the fix", r.code, r.stderr)
	}
	// Where the kernel does not enforce ext4 project quotas (this root is
	// not ext4 with prjquota): the reason and the fix, never the fallback.
	if r := s.run("init", "--backend", "ext4"); r.code != 1 || !strings.Contains(r.stderr, "initialised for the ext4 backend") ||
		!strings.Contains(r.stderr, "-o prjquota") || !strings.Contains(r.stderr, "--backend fallback") {
		t.Errorf("init --backend ext4 on a root without ext4 project quotas: exit %d %q; want 1 with the reason and the fix", r.code, r.stderr)
	}
	if r := s.run("init", "--backend", "zfs"); r.code != 2 || !strings.Contains(r.stderr, `--backend "zfs": use auto`) {
		t.Errorf("init --backend zfs: exit %d %q", r.code, r.stderr)
	}
	var res struct {
		Backend backendObject `json:"backend"`
	}
	s.json(&res, "init", "--backend", "fallback")
	if res.Backend.Kind != "fallback" || res.Backend.Enforced || !strings.Contains(res.Backend.Reason, "(backend fallback)") {
		t.Errorf("init --backend fallback: %+v", res.Backend)
	}
	s.ok("project", "add", "omni")
	var p struct {
		Backend backendObject `json:"backend"`
		Trees   []struct {
			Backend backendObject `json:"backend"`
		} `json:"trees"`
	}
	for _, cmd := range [][]string{{"project", "show", "omni"}, {"project", "check", "omni"}, {"project", "set", "omni", "--bytes-hard", "1g"}} {
		s.json(&p, cmd...)
		if p.Backend.Kind != "fallback" || len(p.Trees) != 3 /* workspace, cache, scratch */ || p.Trees[0].Backend != p.Backend {
			t.Errorf("%s --json: backend %+v, trees %+v", strings.Join(cmd, " "), p.Backend, p.Trees)
		}
	}
	if row := s.report()["omni/workspace"]; row.Backend.Kind != "fallback" || row.Backend.Enforced || row.Backend.Reason == "" {
		t.Errorf("report --json backend: %+v", row.Backend)
	}
	// init without --backend keeps the recorded choice; auto forgets it.
	if out := s.ok("init"); !strings.Contains(out, "backend: fallback (chosen at init)") {
		t.Errorf("init after --backend fallback: %q", out)
	}
	s.json(&res, "init", "--backend", "auto")
	if !strings.Contains(res.Backend.Reason, "is not XFS") {
		t.Errorf("init --backend auto: %+v", res.Backend)
	}
	// A root initialised for XFS never falls back without a word.
	os.WriteFile(filepath.Join(s.root, ".xfsq/backend"), []byte("xfs\n"), 0o600)
	if r := s.run("report"); r.code != 1 || !strings.Contains(r.stderr, "initialised for the xfs backend") {
		t.Errorf("report on a root recorded as xfs, not on XFS: exit %d %q", r.code, r.stderr)
	}
}
