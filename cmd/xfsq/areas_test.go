package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store"
)

func quotaUsage(bytes, inodes uint64) quota.Usage { return quota.Usage{Bytes: bytes, Inodes: inodes} }

// A project's scratch (scratch/PROJECT, where its runs keep
// scratch/PROJECT/RUN) is a tree of its own on the fallback: it has an ID
// and a limit (default_scratch_quota, or --scratch-bytes-hard), a row in
// report, and writes through xfsq into it are admitted against that limit;
// a run that filled it outside xfsq makes the project's admission deny.
func TestScratchIsABoundedTree(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := fallbackSandbox(t, dsn)
		s.ok("project", "add", "omni", "--scratch-bytes-hard", "64k")
		rows := s.report()
		scratch, ok := rows["omni/scratch"]
		if !ok || scratch.BytesHard != 64<<10 || scratch.ProjectID == 0 || scratch.ProjectID == rows["omni/workspace"].ProjectID {
			t.Fatalf("report has no scratch row of its own with the limit given: %+v", rows)
		}
		var only []reportRow
		if s.json(&only, "report", "--area", "scratch"); len(only) != 1 || only[0].Area != "scratch" {
			t.Errorf("report --area scratch: %+v", only)
		}
		if r := s.run("report", "--area", "bogus"); r.code != 2 || !strings.Contains(r.stderr, "scratch") {
			t.Errorf("report --area bogus: exit %d %q, want 2 naming the areas", r.code, r.stderr)
		}

		// Through xfsq: admitted against the scratch limit, not the workspace's.
		big := filepath.Join(t.TempDir(), "big")
		os.WriteFile(big, make([]byte, 100<<10), 0o644)
		if r := s.run("files", "put", "omni", "run1/out", "--area", "scratch", "--from", big); r.code != 3 {
			t.Errorf("100 KiB into a 64 KiB scratch: exit %d %q, want 3", r.code, r.stderr)
		}
		if r := s.run("files", "put", "omni", "run1/out", "--from", big); r.code != 0 {
			t.Errorf("the same 100 KiB into the workspace: exit %d %q", r.code, r.stderr)
		}
		small := filepath.Join(t.TempDir(), "small")
		os.WriteFile(small, make([]byte, 8<<10), 0o644)
		s.ok("files", "put", "omni", "run1/out", "--area", "scratch", "--from", small)
		if _, err := os.Stat(filepath.Join(s.root, "scratch/omni/run1/out")); err != nil {
			t.Errorf("the admitted write is not in scratch/omni/run1: %v", err)
		}
		if out := s.ok("files", "ls", "omni", "run1", "--area", "scratch"); !strings.Contains(out, "out") {
			t.Errorf("files ls --area scratch: %q", out)
		}

		// --area scratch where areas are taken: set, snapshot, top.
		s.ok("project", "set", "omni", "--area", "scratch", "--bytes-hard", "256k")
		s.ok("files", "put", "omni", "run1/big", "--area", "scratch", "--from", big)
		if out := s.ok("snapshot", "omni", "--area", "scratch"); !strings.Contains(out, "omni scratch:") {
			t.Errorf("snapshot --area scratch: %q", out)
		}
		if out := s.ok("top", "omni", "--area", "scratch"); !strings.Contains(out, "run1") {
			t.Errorf("top --area scratch: %q", out)
		}
		s.ok("files", "rm", "omni", "run1/big", "--area", "scratch")
		s.ok("project", "set", "omni", "--area", "scratch", "--bytes-hard", "64k")

		// A run filling scratch outside xfsq: seen at the next walk, and
		// admission then denies naming the scratch tree.
		os.WriteFile(filepath.Join(s.root, "scratch/omni/run1/junk"), make([]byte, 200<<10), 0o644)
		if r := s.run("project", "check", "omni", "--refresh"); r.code != 3 || !strings.Contains(r.stderr, "scratch") {
			t.Errorf("check with scratch over its limit: exit %d %q, want 3 naming scratch", r.code, r.stderr)
		}

		// New projects take default_scratch_quota.
		s.ok("settings", "set", "default_scratch_quota", "1MiB")
		s.ok("project", "add", "beta")
		if got := s.report()["beta/scratch"].BytesHard; got != 1<<20 {
			t.Errorf("beta's scratch hard limit %d, want default_scratch_quota 1 MiB", got)
		}
		if r := s.run("settings", "set", "default_scratch_quota", "0"); r.code != 2 {
			t.Errorf("default_scratch_quota 0 without --allow-zero: exit %d, want 2", r.code)
		}
	})
}

// A project registered before scratch had trees (its store has no scratch
// row) is found by doctor, and doctor --fix gives it the tree, adopting the
// runs' scratch already there and counting it.
func TestDoctorGivesOldProjectsTheirScratchTree(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	if err := os.MkdirAll(filepath.Join(s.root, "scratch/omni/run1"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(s.root, "scratch/omni/run1/data"), make([]byte, 40<<10), 0o644)
	// What an older xfsq recorded: no scratch tree.
	st := s.store()
	if err := st.InTx(context.Background(), func(tx *store.Tx) error { return tx.DeleteTree(context.Background(), "omni", "scratch") }); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, ok := s.report()["omni/scratch"]; ok {
		t.Fatal("the scratch row survived its deletion")
	}
	r := s.run("doctor")
	if r.code != 1 || !strings.Contains(r.stdout, "missing-tree") || !strings.Contains(r.stdout, "scratch/omni") {
		t.Fatalf("doctor on a project without its scratch tree: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s.ok("doctor", "--fix")
	row, ok := s.report()["omni/scratch"]
	if !ok || row.BytesHard != 20<<30 || row.UsedBytes < 40<<10 {
		t.Errorf("after doctor --fix: scratch row %+v (ok %v), want default_scratch_quota and the 40 KiB already there", row, ok)
	}
	if r := s.run("doctor"); r.code != 0 {
		t.Errorf("doctor after the fix: exit %d\n%s", r.code, r.stdout)
	}
	if _, err := os.Stat(filepath.Join(s.root, "scratch/omni/run1/data")); err != nil {
		t.Errorf("the fix lost the run's scratch: %v", err)
	}
}

type graceRow struct {
	Project         string     `json:"project"`
	Area            string     `json:"area"`
	BytesGraceEnds  *time.Time `json:"bytes_grace_ends_at"`
	InodesGraceEnds *time.Time `json:"inodes_grace_ends_at"`
}

func (s *testRoot) grace(key string) graceRow {
	s.t.Helper()
	var rows []graceRow
	s.json(&rows, "report")
	for _, r := range rows {
		if r.Project+"/"+r.Area == key {
			return r
		}
	}
	s.t.Fatalf("report has no row %s", key)
	return graceRow{}
}

// On the fallback a tree over its soft limit gets a grace timer
// (soft_grace), reported as bytes_grace_ends_at / inodes_grace_ends_at;
// once it has run out admission denies, and going back under stops it.
func TestSoftGraceEscalatesOnTheFallback(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := fallbackSandbox(t, dsn)
		s.ok("project", "add", "omni", "--bytes-soft", "16k", "--bytes-hard", "10m", "--inodes-soft", "3")
		body := filepath.Join(t.TempDir(), "body")
		os.WriteFile(body, make([]byte, 64<<10), 0o644)
		before := time.Now()
		s.ok("files", "put", "omni", "a", "--from", body)
		g := s.grace("omni/workspace")
		if g.BytesGraceEnds == nil || g.BytesGraceEnds.Before(before.Add(7*24*time.Hour-time.Minute)) || g.BytesGraceEnds.After(time.Now().Add(7*24*time.Hour+time.Minute)) {
			t.Fatalf("over the soft limit: bytes_grace_ends_at %v, want soft_grace (7d) from the write", g.BytesGraceEnds)
		}
		if g.InodesGraceEnds == nil { // 4 inodes (the tree, uploads, inbox, a) over 3
			t.Errorf("over the soft inode limit: no inodes_grace_ends_at")
		}
		if r := s.run("project", "check", "omni"); r.code != 0 || !strings.Contains(r.stderr, "warn") || !strings.Contains(r.stderr, "grace ends") {
			t.Errorf("check within grace: exit %d %q, want 0 and a warning with the grace end", r.code, r.stderr)
		}
		s.ok("settings", "set", "soft_grace", "1s")
		time.Sleep(1100 * time.Millisecond)
		if r := s.run("project", "check", "omni"); r.code != 3 || !strings.Contains(r.stderr, "past its grace") {
			t.Errorf("check past grace: exit %d %q, want 3 (deny)", r.code, r.stderr)
		}
		if r := s.run("settings", "set", "soft_grace", "0s"); r.code != 2 {
			t.Errorf("soft_grace 0s: exit %d, want 2 (the kernel reads 0 as its default)", r.code)
		}
		// Back under both soft limits (seen by a walk): the timers stop.
		s.ok("files", "rm", "omni", "a")
		s.ok("report", "--refresh")
		if g := s.grace("omni/workspace"); g.BytesGraceEnds != nil || g.InodesGraceEnds != nil {
			t.Errorf("back under the soft limits, grace still reported: %+v", g)
		}
		if r := s.run("project", "check", "omni"); r.code != 0 {
			t.Errorf("check back under: exit %d %q", r.code, r.stderr)
		}
	})
}

type ageRow struct {
	Project         string     `json:"project"`
	Area            string     `json:"area"`
	UsedBytes       uint64     `json:"used_bytes"`
	UsageAsOf       *time.Time `json:"usage_as_of"`
	UsageAgeSeconds *float64   `json:"usage_age_seconds"`
	Stale           bool       `json:"stale"`
}

// On the fallback each report row says how old its figure is and marks it
// stale past the snapshot interval; a walk by top is a walk like the
// hourly pass's, and report shows what it saw.
func TestReportSaysHowOldEachFigureIs(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	row := func() ageRow {
		t.Helper()
		var rows []ageRow
		s.json(&rows, "report", "--area", "workspace")
		if len(rows) != 1 {
			t.Fatalf("report --area workspace: %+v", rows)
		}
		return rows[0]
	}
	if r := row(); r.UsageAgeSeconds == nil || *r.UsageAgeSeconds > 60 || r.Stale {
		t.Errorf("just walked: %+v, want a small usage_age_seconds and not stale", r)
	}
	// The hourly pass has not run for two hours.
	st := s.store()
	if err := st.SetBaseline(context.Background(), store.TreeKey{Project: "omni", Area: "workspace"},
		quotaUsage(12<<10, 3), store.WalkAt(time.Now().Add(-2*time.Hour)), store.WalkSeen{}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if r := row(); r.UsageAgeSeconds == nil || *r.UsageAgeSeconds < 7200 || !r.Stale {
		t.Errorf("walked two hours ago: %+v, want usage_age_seconds >= 7200 and stale", r)
	}
	if out := s.ok("report"); !strings.Contains(out, "2h0m ago (stale)") || !strings.Contains(out, "stale: walked over 1h0m ago") {
		t.Errorf("report text does not mark the stale row:\n%s", out)
	}
	// Written outside xfsq, then seen by top: report shows it, fresh.
	os.WriteFile(filepath.Join(s.root, "projects/omni/outside"), make([]byte, 1<<20), 0o644)
	s.ok("top", "omni")
	if r := row(); r.UsedBytes < 1<<20 || r.Stale || *r.UsageAgeSeconds > 60 {
		t.Errorf("after top: %+v, want its walk (1 MiB more, fresh) in report", r)
	}
}
