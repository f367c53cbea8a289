package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// inboundKey is the inbound tree's key in sandbox.report.
const inboundKey = sandbox.RootOwner + "/" + area.Inbound

// On the fallback the root's inbound/ (channel staging) is one tree of its
// own from init on: an ID, a limit (default_inbound_quota, applied at once
// when set), a row in report, --area inbound where areas are taken, writes
// through xfsq admitted against its limit and counted, writes outside xfsq
// counted at the next walk, and writes denied past the hard limit.
func TestInboundIsABoundedTreeOfTheRoot(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := fallbackSandbox(t, dsn)
		rows := s.report()
		in, ok := rows[inboundKey]
		if !ok || in.Area != area.Inbound || in.ProjectID == 0 || in.BytesHard != 10<<30 {
			t.Fatalf("report after init has no inbound row with default_inbound_quota (10 GiB): %+v", rows)
		}
		s.ok("project", "add", "omni")
		rows = s.report()
		for key, r := range rows {
			if key != inboundKey && r.ProjectID == rows[inboundKey].ProjectID {
				t.Errorf("%s shares the inbound tree's project ID %d", key, r.ProjectID)
			}
		}
		var only []reportRow
		if s.json(&only, "report", "--area", "inbound"); len(only) != 1 || only[0].Project != sandbox.RootOwner || only[0].Area != area.Inbound {
			t.Errorf("report --area inbound: %+v, want the inbound tree alone", only)
		}
		if out := s.ok("report", "--area", "inbound"); !strings.Contains(out, sandbox.RootOwner) || !strings.Contains(out, "inbound") || !strings.Contains(out, "10.0 GiB") {
			t.Errorf("report text has no inbound row with its limit:\n%s", out)
		}

		// default_inbound_quota: validated, and the inbound tree's limit at once.
		if r := s.run("settings", "set", "default_inbound_quota", "lots"); r.code != 2 || !strings.Contains(r.stderr, "default_inbound_quota") {
			t.Errorf("settings set default_inbound_quota lots: exit %d %q, want 2 naming the setting", r.code, r.stderr)
		}
		if r := s.run("settings", "set", "default_inbound_quota", "0"); r.code != 2 || !strings.Contains(r.stderr, "inbound") {
			t.Errorf("settings set default_inbound_quota 0: exit %d %q, want 2 saying what it switches off", r.code, r.stderr)
		}
		if got := s.report()[inboundKey].BytesHard; got != 10<<30 {
			t.Errorf("a refused setting changed the inbound limit to %d", got)
		}
		s.ok("settings", "set", "default_inbound_quota", "64k")
		if got := s.report()[inboundKey].BytesHard; got != 64<<10 {
			t.Fatalf("after settings set default_inbound_quota 64k the inbound hard limit is %d", got)
		}

		// Through xfsq: admitted against the inbound limit, and counted.
		big := filepath.Join(t.TempDir(), "big")
		os.WriteFile(big, make([]byte, 100<<10), 0o644)
		if r := s.run("files", "put", sandbox.RootOwner, "chan1/msg", "--area", "inbound", "--from", big); r.code != 3 {
			t.Errorf("100 KiB into a 64 KiB inbound tree: exit %d %q, want 3", r.code, r.stderr)
		}
		small := filepath.Join(t.TempDir(), "small")
		os.WriteFile(small, make([]byte, 16<<10), 0o644)
		before := s.report()[inboundKey].UsedBytes
		s.ok("files", "put", sandbox.RootOwner, "chan1/msg", "--area", "inbound", "--from", small)
		if _, err := os.Stat(filepath.Join(s.root, "inbound/chan1/msg")); err != nil {
			t.Errorf("the admitted write is not in inbound/chan1: %v", err)
		}
		if got := s.report()[inboundKey].UsedBytes; got < before+16<<10 {
			t.Errorf("inbound usage %d after a 16 KiB write through xfsq, was %d: the write is not counted", got, before)
		}
		if out := s.ok("files", "ls", sandbox.RootOwner, "chan1", "--area", "inbound"); !strings.Contains(out, "msg") {
			t.Errorf("files ls --area inbound: %q", out)
		}
		if out := s.ok("top", sandbox.RootOwner, "--area", "inbound"); !strings.Contains(out, "chan1") {
			t.Errorf("top --area inbound: %q", out)
		}

		// A channel staging outside xfsq: counted at the next walk, then
		// writes through xfsq are denied past the hard limit.
		os.WriteFile(filepath.Join(s.root, "inbound/chan1/junk"), make([]byte, 200<<10), 0o644)
		if out := s.ok("snapshot", "--area", "inbound"); !strings.Contains(out, "inbound") {
			t.Errorf("snapshot --area inbound: %q", out)
		}
		if got := s.report()[inboundKey].UsedBytes; got < 200<<10 {
			t.Errorf("inbound usage %d after a walk of 200 KiB staged outside xfsq", got)
		}
		tiny := filepath.Join(t.TempDir(), "tiny")
		os.WriteFile(tiny, []byte("x"), 0o644)
		if r := s.run("files", "put", sandbox.RootOwner, "chan2/msg", "--area", "inbound", "--from", tiny); r.code != 3 {
			t.Errorf("a write into an inbound tree over its hard limit: exit %d %q, want 3", r.code, r.stderr)
		}
		if r := s.run("report", "--check", "--area", "inbound"); r.code != 1 {
			t.Errorf("report --check with inbound over its limit: exit %d, want 1", r.code)
		}

		// Its other limits through project set, named as _root --area inbound.
		s.ok("project", "set", sandbox.RootOwner, "--area", "inbound", "--bytes-hard", "1m", "--inodes-hard", "50")
		if r := s.report()[inboundKey]; r.BytesHard != 1<<20 || r.InodesHard != 50 {
			t.Errorf("project set _root --area inbound: %+v", r)
		}
		s.ok("files", "put", sandbox.RootOwner, "chan2/msg", "--area", "inbound", "--from", tiny)
		s.ok("settings", "reset", "default_inbound_quota")
		if r := s.report()[inboundKey]; r.BytesHard != 10<<30 || r.InodesHard != 50 {
			t.Errorf("after settings reset default_inbound_quota: %+v, want the default 10 GiB hard, the inode limit kept", r)
		}

		// Misnamed: a project has no inbound tree, _root nothing else.
		for _, args := range [][]string{
			{"files", "ls", "omni", "--area", "inbound"},
			{"top", "omni", "--area", "inbound"},
			{"snapshot", "omni", "--area", "inbound"},
			{"project", "set", "omni", "--area", "inbound", "--bytes-hard", "1m"},
			{"files", "ls", sandbox.RootOwner},
			{"sweep", "omni", "--area", "inbound", "--dry-run"},
		} {
			if r := s.run(args...); r.code != 2 || !strings.Contains(r.stderr, "inbound") {
				t.Errorf("%v: exit %d %q, want 2 saying what inbound is", args, r.code, r.stderr)
			}
		}
	})
}

// The inbound tree's owner row is never a tenant project: not listed, not
// added, not removed, not shown, leased or swept as one.
func TestInboundIsNoTenantProject(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	os.MkdirAll(filepath.Join(s.root, "inbound/chan1"), 0o755)
	os.WriteFile(filepath.Join(s.root, "inbound/chan1/msg"), []byte("staged"), 0o644)
	var list []struct {
		Project string `json:"project"`
	}
	s.json(&list, "project", "list")
	if len(list) != 1 || list[0].Project != "omni" {
		t.Errorf("project list: %+v, want omni alone", list)
	}
	if out := s.ok("project", "list"); strings.Contains(out, sandbox.RootOwner) {
		t.Errorf("project list text names %s:\n%s", sandbox.RootOwner, out)
	}
	for _, args := range [][]string{
		{"project", "add", sandbox.RootOwner},
		{"project", "rm", sandbox.RootOwner},
		{"project", "rm", sandbox.RootOwner, "--purge", "--force"},
		{"project", "show", sandbox.RootOwner},
		{"project", "check", sandbox.RootOwner},
		{"lease", "acquire", sandbox.RootOwner, "run1"},
		{"sweep", sandbox.RootOwner, "--area", "cache", "--dry-run"},
	} {
		if r := s.run(args...); r.code != 2 || !strings.Contains(r.stderr, "not a project") && !strings.Contains(r.stderr, "inbound") {
			t.Errorf("%v: exit %d %q, want 2 saying %s is not a project", args, r.code, r.stderr, sandbox.RootOwner)
		}
	}
	if _, ok := s.report()[inboundKey]; !ok {
		t.Error("the inbound tree is gone after the refused removals")
	}
	if b, err := os.ReadFile(filepath.Join(s.root, "inbound/chan1/msg")); err != nil || string(b) != "staged" {
		t.Errorf("staged data after the refused removals: %q %v", b, err)
	}
	// A sweep of every project covers inbound by inbound_ttl: what was
	// staged just now is not planned.
	var plan sweepJSON
	s.json(&plan, "sweep", "--all", "--dry-run")
	if len(plan.Evicted) != 0 {
		t.Errorf("sweep --all --dry-run plans %+v, want nothing (the staging is fresh)", plan.Evicted)
	}
	// doctor sees no unmanaged directory and no other drift in inbound.
	if r := s.run("doctor"); r.code != 0 {
		t.Errorf("doctor on a fresh root with staged inbound data: exit %d\n%s", r.code, r.stdout)
	}
}

// A root initialised before inbound/ was a tree (its store has no inbound
// row, nor its owner) is found by doctor; doctor --fix makes the tree,
// adopting and counting what is staged there, with default_inbound_quota.
func TestDoctorGivesOldRootsTheirInboundTree(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := fallbackSandbox(t, dsn)
		s.ok("project", "add", "omni")
		os.MkdirAll(filepath.Join(s.root, "inbound/chan1"), 0o755)
		os.WriteFile(filepath.Join(s.root, "inbound/chan1/data"), make([]byte, 40<<10), 0o644)
		st := s.store()
		if err := st.InTx(context.Background(), func(tx *store.Tx) error {
			return tx.DeleteProject(context.Background(), store.RootOwner)
		}); err != nil {
			t.Fatal(err)
		}
		st.Close()
		if _, ok := s.report()[inboundKey]; ok {
			t.Fatal("the inbound row survived its deletion")
		}
		if r := s.run("files", "ls", sandbox.RootOwner, "--area", "inbound"); r.code != 1 || !strings.Contains(r.stderr, "doctor --fix") {
			t.Errorf("files ls of a missing inbound tree: exit %d %q, want 1 naming doctor --fix", r.code, r.stderr)
		}
		r := s.run("doctor")
		if r.code != 1 || !strings.Contains(r.stdout, "missing-tree") || !strings.Contains(r.stdout, "inbound") {
			t.Fatalf("doctor on a root without its inbound tree: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		s.ok("settings", "set", "default_inbound_quota", "1MiB") // no tree yet: taken when it is made
		s.ok("doctor", "--fix")
		row, ok := s.report()[inboundKey]
		if !ok || row.BytesHard != 1<<20 || row.UsedBytes < 40<<10 || row.ProjectID == 0 {
			t.Errorf("after doctor --fix: inbound row %+v (ok %v), want default_inbound_quota and the 40 KiB staged", row, ok)
		}
		if r := s.run("doctor"); r.code != 0 {
			t.Errorf("doctor after the fix: exit %d\n%s", r.code, r.stdout)
		}
		var list []struct {
			Project string `json:"project"`
		}
		if s.json(&list, "project", "list"); len(list) != 1 {
			t.Errorf("project list after the fix: %+v, want omni alone", list)
		}
		if _, err := os.Stat(filepath.Join(s.root, "inbound/chan1/data")); err != nil {
			t.Errorf("the fix lost staged data: %v", err)
		}
	})
}
