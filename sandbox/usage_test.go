package sandbox_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// TestUsageIsReportWithoutSnapshots: Usage gives every tree the usage,
// limits and usage_as_of Report gives it (the last walk plus xfsq's own
// writes), and, like Report, walks nothing.
func TestUsageIsReportWithoutSnapshots(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		r.Add(100<<20, "a", "b", "c")
		if err := sandbox.TestStore(m).AddLedger(ctx, store.TreeKey{Project: "b", Area: area.Workspace}, 3<<20, 2, "test", time.Time{}); err != nil {
			t.Fatal(err)
		}
		if err := sandbox.TestStore(m).AddLedger(ctx, store.TreeKey{Project: "c", Area: area.Cache}, 1<<20, 1, "test", time.Time{}); err != nil {
			t.Fatal(err)
		}
		// Behind xfsq's back: counted by neither until a walk.
		if err := os.WriteFile(filepath.Join(m.Root, "projects", "a", "big"), make([]byte, 1<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		report, err := m.Report(ctx)
		if err != nil {
			t.Fatal(err)
		}
		usage, err := m.Usage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n := 3*len(area.OfProject) + 1; len(usage) != n || len(report) != n { // and the inbound tree
			t.Fatalf("usage has %d trees, report %d, want %d", len(usage), len(report), n)
		}
		for i, u := range usage {
			w := report[i]
			if u.Project != w.Project || u.Area != w.Area || u.UsedBytes != w.UsedBytes || u.UsedInodes != w.UsedInodes ||
				u.BytesHard != w.BytesHard || u.BytesSoft != w.BytesSoft || u.InodesHard != w.InodesHard || u.Percent != w.Percent ||
				(u.UsageWalkedAt == nil) != (w.UsageWalkedAt == nil) || (u.UsageWalkedAt != nil && !u.UsageWalkedAt.Equal(*w.UsageWalkedAt)) {
				t.Errorf("tree %d: usage %+v, report %+v", i, u, w)
			}
			if u.Project == "a" && u.Area == area.Workspace && u.UsedBytes >= 1<<20 {
				t.Errorf("a/workspace: %d bytes: Usage walked the tree", u.UsedBytes)
			}
			if u.Project == "b" && u.Area == area.Workspace && u.UsedBytes < 3<<20 {
				t.Errorf("b/workspace: %d bytes: the ledger's 3 MiB is missing", u.UsedBytes)
			}
		}
	})
}

// TestExceeded is Check's deny: at a hard limit, or over a soft one past
// its grace.
func TestExceeded(t *testing.T) {
	now := time.Now()
	past, future := now.Add(-time.Minute), now.Add(time.Minute)
	for _, c := range []struct {
		name string
		t    sandbox.TreeStatus
		want bool
	}{
		{"under", sandbox.TreeStatus{UsedBytes: 9, BytesHard: 10}, false},
		{"at hard", sandbox.TreeStatus{UsedBytes: 10, BytesHard: 10}, true},
		{"inodes at hard", sandbox.TreeStatus{UsedInodes: 5, InodesHard: 5}, true},
		{"soft within grace", sandbox.TreeStatus{UsedBytes: 6, BytesSoft: 5, BytesGraceEndsAt: &future}, false},
		{"soft past grace", sandbox.TreeStatus{UsedBytes: 6, BytesSoft: 5, BytesGraceEndsAt: &past}, true},
		{"no limits", sandbox.TreeStatus{UsedBytes: 1 << 40}, false},
	} {
		if got := sandbox.Exceeded(c.t, now); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestReadJournal: a follower gets each settled deletion, sweep and
// snapshot pass once, across reads, and pending deletions not at all; the
// walks of a real scheduled pass come with their durations.
func TestReadJournal(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		r.Add(100<<20, "a")
		record := func(proj string, payload journal.Payload) {
			t.Helper()
			if err := sandbox.TestStore(m).InTx(ctx, func(tx *store.Tx) error { return tx.AppendEvent(ctx, proj, "test", payload) }); err != nil {
				t.Fatal(err)
			}
		}
		rec := deletion.Record{SweepID: "s1", Area: area.Cache, Path: "cache/a/x", Bytes: 100, State: deletion.StatePending}
		record("a", rec)
		rec.State, rec.Bytes = deletion.StateDone, 90
		record("a", rec)
		record("a", deletion.Record{Area: area.Workspace, Path: "projects/a/y", DeletionID: "d", State: deletion.StateFailed})
		record("", journal.Swept{SweepID: "s1", DurationSeconds: 1.5})
		if _, err := m.Snapshot(ctx, sandbox.SnapshotOptions{Scheduled: true}); err != nil {
			t.Fatal(err)
		}
		var c sandbox.JournalCursor
		news, err := m.ReadJournal(ctx, &c)
		if err != nil {
			t.Fatal(err)
		}
		want := []sandbox.Deletion{{Project: "a", Area: area.Cache, Bytes: 90, State: deletion.StateDone, BySweep: true},
			{Project: "a", Area: area.Workspace, State: deletion.StateFailed}}
		if len(news.Deletions) != 2 || news.Deletions[0] != want[0] || news.Deletions[1] != want[1] {
			t.Errorf("deletions %+v, want %+v", news.Deletions, want)
		}
		if len(news.Sweeps) != 1 || news.Sweeps[0].Duration != 1500*time.Millisecond {
			t.Errorf("sweeps %+v, want one of 1.5s", news.Sweeps)
		}
		if len(news.SnapshotPasses) != 1 || len(news.Walks) != len(area.OfProject)+1 {
			t.Fatalf("passes %v, walks %+v: want one pass walking each of a's trees and the inbound tree", news.SnapshotPasses, news.Walks)
		}
		for _, w := range news.Walks {
			if (w.Project != "a" && w.Project != sandbox.RootOwner) || w.Duration <= 0 {
				t.Errorf("walk %+v: want a's, with a duration", w)
			}
		}
		again, err := m.ReadJournal(ctx, &c)
		if err != nil {
			t.Fatal(err)
		}
		if len(again.Deletions)+len(again.Sweeps)+len(again.Walks)+len(again.SnapshotPasses) != 0 {
			t.Errorf("a second read returned %+v again", again)
		}
		record("", journal.Swept{SweepID: "s2", DurationSeconds: 0.02})
		third, err := m.ReadJournal(ctx, &c)
		if err != nil {
			t.Fatal(err)
		}
		if len(third.Sweeps) != 1 || third.Sweeps[0].Duration != 20*time.Millisecond || len(third.Deletions) != 0 {
			t.Errorf("third read %+v, want only the new sweep", third)
		}
	})
}

// TestReadJournalCountsSweeps: the sweeps a follower is told of (the sweep
// duration metric's source) are those Sweep journals, in the form it
// journals them today, not only the form of older records.
func TestReadJournalCountsSweeps(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		r.Add(100<<20, "a")
		if _, err := m.Sweep(ctx, sandbox.SweepOptions{}); err != nil {
			t.Fatal(err)
		}
		var c sandbox.JournalCursor
		news, err := m.ReadJournal(ctx, &c)
		if err != nil {
			t.Fatal(err)
		}
		if len(news.Sweeps) != 1 || news.Unreadable != 0 {
			t.Errorf("sweeps %+v, %d unreadable records; want the one sweep", news.Sweeps, news.Unreadable)
		}
	})
}
