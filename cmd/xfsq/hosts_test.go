package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox"
)

// hostRoot is a root initialised on the shared store dsn under host.
func hostRoot(t *testing.T, dsn, host string) *testRoot {
	t.Helper()
	s := newSandbox(t, t.TempDir(), dsn)
	s.env = []string{"XFSQ_HOST=" + host}
	s.ok("init")
	return s
}

func treeListing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, _ os.DirEntry, _ error) error {
		out = append(out, p)
		return nil
	})
	return out
}

// The attacks through the CLI: another root's host name is
// refused (exit 1) naming both names and the fix, nothing of that host is
// journalled and nothing is made in the root; a new root takes a host name
// over only with --take-over-host, journalled.
func TestRootBoundToItsHostCLI(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		a, b, c := hostRoot(t, dsn, "host-a"), hostRoot(t, dsn, "host-b"), hostRoot(t, dsn, "host-c")
		b.ok("project", "add", "omni")
		var before []sandbox.Event
		b.json(&before, "events")

		r := a.run("--host", "host-b", "snapshot", "omni")
		if r.code != 1 || !strings.Contains(r.stderr, `bound to host "host-a"`) || !strings.Contains(r.stderr, `not to host "host-b"`) ||
			!strings.Contains(r.stderr, "--host host-a") {
			t.Errorf("--root A --host host-b snapshot: exit %d %q; want 1 naming both and the fix", r.code, r.stderr)
		}
		cBefore := treeListing(t, c.root)
		r = c.run("--host", "host-b", "doctor", "--fix")
		if r.code != 1 || !strings.Contains(r.stderr, `bound to host "host-c"`) {
			t.Errorf("--root C --host host-b doctor --fix: exit %d %q", r.code, r.stderr)
		}
		if got := treeListing(t, c.root); !slices.Equal(got, cBefore) {
			t.Errorf("doctor --fix under another host made %v in C", slices.DeleteFunc(got, func(p string) bool { return slices.Contains(cBefore, p) }))
		}
		var after []sandbox.Event
		b.json(&after, "events")
		if len(after) != len(before) {
			t.Errorf("host-b's journal went from %d to %d records", len(before), len(after))
		}

		d := newSandbox(t, t.TempDir(), dsn)
		d.env = []string{"XFSQ_HOST=host-b"}
		if r := d.run("init"); r.code != 1 || !strings.Contains(r.stderr, b.root) || !strings.Contains(r.stderr, "xfsq init --take-over-host") {
			t.Errorf("a new root under host-b: exit %d %q; want 1 naming %s and the takeover", r.code, r.stderr, b.root)
		}
		if entries, _ := os.ReadDir(d.root); len(entries) != 0 {
			t.Errorf("a refused init made %v", entries)
		}
		d.ok("init", "--take-over-host")
		var bound []sandbox.Event
		d.json(&bound, "events", "--type", string(journal.TypeRootBound))
		if len(bound) == 0 || !strings.Contains(string(bound[0].Payload), `"takeover"`) || !strings.Contains(string(bound[0].Payload), b.root) {
			t.Errorf("root.bound after the takeover: %+v", bound)
		}
		if out := d.ok("events", "--type", string(journal.TypeRootBound)); !strings.Contains(out, "taken over from "+b.root) {
			t.Errorf("events in text: %q", out)
		}
	})
}

// With PostgreSQL a defaulted host name is said, at init and after.
func TestDefaultHostSaidCLI(t *testing.T) {
	s := newSandbox(t, t.TempDir(), storetest.Postgres(t))
	s.env = []string{"XFSQ_HOST="}
	host, _ := os.Hostname()
	if out := s.ok("init"); !strings.Contains(out, "no host name was given") || !strings.Contains(out, host) {
		t.Errorf("init: %q; want a note that the host is the hostname %s", out, host)
	}
	if r := s.run("project", "list"); r.code != 0 || !strings.Contains(r.stderr, "no host name was given") {
		t.Errorf("project list: exit %d, stderr %q", r.code, r.stderr)
	}
}
