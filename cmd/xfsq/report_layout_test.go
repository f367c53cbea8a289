package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// report's default fits a terminal of 100 columns — its notes too — with
// a soft limit's grace as a span ("6d left"); --wide and -o show the
// rest, as ps and kubectl do.
func TestReportFitsAHundredColumns(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni-docs", "--bytes-hard", "50g", "--bytes-soft", "16k")
	s.ok("project", "add", "build-farm-7")
	os.WriteFile(filepath.Join(s.root, "projects/omni-docs/data"), make([]byte, 64<<10), 0o644)
	s.ok("snapshot", "omni-docs") // over the soft limit: its grace runs
	out := s.ok("report")
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if len([]rune(l)) > 100 {
			t.Errorf("a line of %d columns:\n%s", len([]rune(l)), l)
		}
	}
	for _, want := range []string{"PROJECT", "USED", "HARD", "USE%", "GRACE", "24H", "FULL IN", "AS OF", "6d left", "promised: "} {
		if !strings.Contains(out, want) {
			t.Errorf("the default report has no %q:\n%s", want, out)
		}
	}
	for _, wideOnly := range []string{"ISOFT", "LAST ACTIVE", "RECLAIM", "7D"} {
		if strings.Contains(out, wideOnly) {
			t.Errorf("the default report shows %s, which is --wide's:\n%s", wideOnly, out)
		}
	}
	wide := s.ok("report", "--wide")
	for _, want := range []string{"ID", "SOFT", "INODES", "ISOFT", "IHARD", "7D", "RECLAIM", "LAST ACTIVE"} {
		if !strings.Contains(wide, want) {
			t.Errorf("report --wide has no %s:\n%s", want, wide)
		}
	}
	if got := s.ok("report", "-o", "project,area,eta", "-N"); len(strings.Fields(strings.SplitN(got, "\n", 2)[0])) != 3 {
		t.Errorf("report -o project,area,eta -N: %q, want three columns a row", got)
	}
	if r := s.run("report", "-o", "project,size"); r.code != 2 || !strings.Contains(r.stderr, `no column "size"`) {
		t.Errorf("an unknown column: exit %d %q", r.code, r.stderr)
	}
	if r := s.run("report", "--wide", "-o", "project"); r.code != 2 {
		t.Errorf("--wide with -o: exit %d %q", r.code, r.stderr)
	}
}

// report --sort and top --sort take the same words; report's older ones
// still work; what top cannot order by is refused naming what it can.
func TestSortVocabularyIsShared(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "small")
	s.ok("project", "add", "big")
	os.WriteFile(filepath.Join(s.root, "projects/big/data"), make([]byte, 1<<20), 0o644)
	s.ok("snapshot", "big")
	first := func(args ...string) string {
		t.Helper()
		return strings.Fields(s.ok(append([]string{"report", "-N", "--area", "workspace"}, args...)...))[0]
	}
	for _, key := range []string{"size", "used", "files"} {
		if got := first("--sort", key); got != "big" {
			t.Errorf("report --sort %s: %s first, want big", key, got)
		}
	}
	if got := first("--sort", "name"); got != "big" || first("--sort", "project") != "big" {
		t.Errorf("report --sort name: %s first", got)
	}
	for _, key := range []string{"name", "size", "files", "mtime", "percent"} {
		s.ok("top", "big", "--sort", key)
	}
	if r := s.run("top", "big", "--sort", "eta"); r.code != 2 || !strings.Contains(r.stderr, "use name, size, files, mtime, percent") {
		t.Errorf("top --sort eta: exit %d %q", r.code, r.stderr)
	}
	if r := s.run("report", "--sort", "nope"); r.code != 2 || !strings.Contains(r.stderr, "eta") {
		t.Errorf("report --sort nope: exit %d %q", r.code, r.stderr)
	}
}

// A bare number under 1 MiB for a byte limit is a slip (10 for 10g):
// refused naming the fix, unless given a unit or --force.
func TestBareByteLimitIsRefusedUnlessForced(t *testing.T) {
	s := fallbackSandbox(t, "")
	for _, args := range [][]string{
		{"project", "add", "omni", "--bytes-hard", "10"},
		{"project", "add", "omni", "--cache-bytes-soft", "4096"},
	} {
		if r := s.run(args...); r.code != 2 || !strings.Contains(r.stderr, "give a unit") || !strings.Contains(r.stderr, "--force") {
			t.Errorf("%v: exit %d %q", args, r.code, r.stderr)
		}
	}
	s.ok("project", "add", "omni", "--bytes-hard", "10g", "--bytes-soft", "0", "--cache-bytes-hard", "2097152")
	if r := s.run("project", "set", "omni", "--bytes-soft", "512"); r.code != 2 {
		t.Errorf("set --bytes-soft 512: exit %d %q", r.code, r.stderr)
	}
	s.ok("project", "set", "omni", "--bytes-soft", "512", "--force")
	if got := s.report()["omni/workspace"].BytesSoft; got != 512 {
		t.Errorf("soft limit after --force: %d, want 512", got)
	}
}
