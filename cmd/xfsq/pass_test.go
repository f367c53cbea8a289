package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/prereq"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox"
)

// passCommand is the xfsq command line the shipped hourly pass runs, as
// contrib's systemd service and cron line both give it.
func passCommand(t *testing.T) []string {
	t.Helper()
	unit, err := os.ReadFile("../../contrib/systemd/xfsq-pass.service")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ExecStart=/usr/local/bin/xfsq (.+)$`).FindStringSubmatch(string(unit))
	if m == nil {
		t.Fatal("xfsq-pass.service starts no /usr/local/bin/xfsq")
	}
	cron, err := os.ReadFile("../../contrib/cron/xfsq-pass")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cron), "/usr/local/bin/xfsq "+m[1]+" ") {
		t.Errorf("the cron line does not run what the systemd unit runs (xfsq %s):\n%s", m[1], cron)
	}
	return strings.Fields(m[1])
}

// The hourly pass shipped for hosts without serve is a command the CLI
// takes, and it journals a limit a tenant reached by writing from its
// container (outside xfsq) within that one pass.
func TestShippedPassJournalsACrossing(t *testing.T) {
	args := passCommand(t)
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni", "--bytes-hard", "1m", "--bytes-soft", "256k")
	if err := os.WriteFile(filepath.Join(s.root, "projects/omni/big"), make([]byte, 512<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	s.ok(args...)
	var evs []sandbox.Event
	s.json(&evs, "events", "--type", "storage.quota_exceeded")
	var p journal.QuotaExceeded
	if len(evs) != 1 || json.Unmarshal(evs[0].Payload, &p) != nil || p.Limit != journal.LimitBytesSoft || p.GraceEndsAt == nil || p.UsedBytes < 512<<10 {
		t.Errorf("after one pass: %+v, want omni's soft byte limit reached, with when its grace ends", evs)
	}
	if out := s.ok("events", "--type", "storage.quota_exceeded"); !strings.Contains(out, "workspace reached its soft byte limit: ") || !strings.Contains(out, "grace ends") {
		t.Errorf("events in words: %s", out)
	}
}

// The shipped timer and its service are units systemd accepts as they are.
func TestShippedPassUnitsVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		prereq.Missing(t, "systemd-analyze (Debian package systemd) checks contrib/systemd/xfsq-pass.*")
		return
	}
	dir := t.TempDir()
	bin, _ := exec.LookPath("true")
	for _, name := range []string{"xfsq-pass.service", "xfsq-pass.timer"} {
		b, err := os.ReadFile("../../contrib/systemd/" + name)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, name), []byte(strings.ReplaceAll(string(b), "/usr/local/bin/xfsq", bin)), 0o644)
	}
	out, err := exec.Command(analyze, "verify", filepath.Join(dir, "xfsq-pass.timer"), filepath.Join(dir, "xfsq-pass.service")).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// xfsq diff reads what changed from the stored snapshots: a directory
// grown between two passes is named with its growth; a span no kept
// snapshot covers is exit 1 with the oldest named.
func TestDiffCommand(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	dir := filepath.Join(s.root, "projects/omni/build")
	os.MkdirAll(dir, 0o755)
	s.ok("snapshot", "omni") // the first tree is kept for comparison; the newest is always there
	time.Sleep(1100 * time.Millisecond)
	os.WriteFile(filepath.Join(dir, "out.bin"), make([]byte, 3<<20), 0o644)
	s.ok("snapshot", "omni")
	out := s.ok("diff", "omni", "--since", "1s")
	if !strings.Contains(out, "grew:") || !regexp.MustCompile(`\+3\.0 MiB .*build`).MatchString(out) {
		t.Errorf("xfsq diff after build/ grew by 3 MiB:\n%s", out)
	}
	if r := s.run("diff", "omni", "--since", "30d"); r.code != 1 || !strings.Contains(r.stderr, "the oldest kept is from") {
		t.Errorf("diff over 30 days with seconds kept: exit %d %q", r.code, r.stderr)
	}
	if r := s.run("diff", "omni", "--since", "soon"); r.code != 2 || !strings.Contains(r.stderr, "--since") {
		t.Errorf("diff --since soon: exit %d %q", r.code, r.stderr)
	}
}
