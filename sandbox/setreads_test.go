package sandbox_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// The reads of a host's trees — report, a cold overview, a sweep's plan,
// a snapshot pass — send the same number of statements for 10 projects as
// for 100, besides, for a sweep's plan, each tree's own records of a walk
// (a plan walks every tree on the fallback, and records each walk on its
// own): a statement per tree was a round trip per tree to a shared
// PostgreSQL (~12,000 for a report of 1,003 projects). A snapshot pass
// records its walks in batches (store.BeginWalks, StoreWalks), a constant
// number of statements each: with one batch for the whole pass, it sends
// as many for 300 trees as for 30 (it sent 19 a tree).
func TestHostReadsAreSetBased(t *testing.T) {
	// One probe of the database's generation per read, however long the
	// read takes: another process's commits are not what is counted here.
	lag := store.GenerationLag
	store.GenerationLag = time.Hour
	t.Cleanup(func() { store.GenerationLag = lag })
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		key := store.TreeKey{Project: "p000", Area: area.Workspace}
		// What recording one walk of a fallback tree sends: its start
		// (the writes in flight) and its baseline, each a transaction.
		walkRecord := func(m *sandbox.Manager) error {
			w, err := sandbox.TestStore(m).BeginWalk(r.Ctx, key, time.Now())
			if err != nil {
				return err
			}
			return sandbox.TestStore(m).SetBaseline(r.Ctx, key, quota.Usage{}, w, store.WalkSeen{})
		}
		// One batch for the whole pass, however slowly the machine walks.
		sandbox.WalkBatches(t, 1000, time.Hour)
		reads := []struct {
			name    string
			run     func(m *sandbox.Manager) error
			perTree func(m *sandbox.Manager) error // nil: nothing
			// more statements per walked tree, beside the walk's own
			// records: a sweep's plan sends one more (its read of the
			// tree's figure after the walk). Its walks are still recorded
			// one by one (retention): to be batched as the pass's are.
			insight int64
		}{
			{"report", func(m *sandbox.Manager) error { _, err := m.Report(r.Ctx); return err }, nil, 0},
			{"overview", func(m *sandbox.Manager) error {
				_, err := m.Overview(r.Ctx, sandbox.OverviewOptions{})
				return err
			}, nil, 0},
			{"sweep plan", func(m *sandbox.Manager) error {
				_, err := m.Sweep(r.Ctx, sandbox.SweepOptions{DryRun: true})
				return err
			}, walkRecord, 1},
			{"snapshot pass", func(m *sandbox.Manager) error {
				_, err := m.Snapshot(r.Ctx, sandbox.SnapshotOptions{})
				return err
			}, nil, 0},
		}
		counts := map[string][]int64{}
		var trees []int
		added := 0
		for _, n := range []int{10, 100} {
			for ; added < n; added++ {
				r.Add(1<<20, fmt.Sprintf("p%03d", added))
			}
			// Every tree snapshotted: growth, activity and top paths read.
			if _, err := r.Manager.Snapshot(r.Ctx, sandbox.SnapshotOptions{}); err != nil {
				t.Fatal(err)
			}
			all, err := sandbox.TestStore(r.Manager).Trees(r.Ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			trees = append(trees, len(all))
			for _, rd := range reads {
				counts[rd.name] = append(counts[rd.name], statementsOf(t, r.Reopen().Manager, rd.run)) // cold: nothing kept
			}
		}
		for _, rd := range reads {
			c, perTree := counts[rd.name], int64(0)
			if rd.perTree != nil {
				perTree = statementsOf(t, r.Reopen().Manager, rd.perTree) + rd.insight
			}
			more := int64(trees[1]-trees[0]) * perTree
			t.Logf("%s: %d statements for 10 projects, %d for 100 (%d of them the added trees' %d records)", rd.name, c[0], c[1], more, trees[1]-trees[0])
			if c[1]-c[0] != more {
				t.Errorf("%s: %d statements for 10 projects, %d for 100: %d more than the added trees' records", rd.name, c[0], c[1], c[1]-c[0]-more)
			}
		}
	})
}

// statementsOf is how many statements run sends through m's store.
func statementsOf(t *testing.T, m *sandbox.Manager, run func(*sandbox.Manager) error) int64 {
	t.Helper()
	before := sandbox.TestStore(m).Statements()
	if err := run(m); err != nil {
		t.Fatal(err)
	}
	return sandbox.TestStore(m).Statements() - before
}

// A host's overview is kept while only other hosts of the fleet write: a
// write on host B leaves host A's answer as it was, a write on A makes it
// assembled again.
func TestOverviewCacheIsScopedToItsHost(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, a *fixture.Root) {
		b := a.OtherHost("host-b")
		a.Add(1<<20, "alpha")
		b.Add(1<<20, "beta")
		hour := sandbox.OverviewOptions{MaxAge: time.Hour} // only a change may make it assembled again
		overview := func() *sandbox.Overview {
			t.Helper()
			ov, err := a.Manager.Overview(a.Ctx, hour)
			if err != nil {
				t.Fatal(err)
			}
			return ov
		}
		steps := []struct {
			name     string
			write    func() error
			assemble bool
		}{
			{"nothing", func() error { return nil }, false},
			{"B adds a project", func() error { _, err := b.Manager.Add(b.Ctx, "gamma", sandbox.AddOptions{}); return err }, false},
			{"B snapshots", func() error { _, err := b.Manager.Snapshot(b.Ctx, sandbox.SnapshotOptions{}); return err }, false},
			{"B changes a setting", func() error { _, _, err := b.Manager.SetSetting(b.Ctx, "soft_grace", "3h"); return err }, false},
			{"A snapshots", func() error { _, err := a.Manager.Snapshot(a.Ctx, sandbox.SnapshotOptions{}); return err }, true},
			{"A adds a project", func() error { _, err := a.Manager.Add(a.Ctx, "delta", sandbox.AddOptions{}); return err }, true},
			{"A changes a setting", func() error { _, _, err := a.Manager.SetSetting(a.Ctx, "soft_grace", "3h"); return err }, true},
		}
		last := overview()
		for _, s := range steps {
			if err := s.write(); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			time.Sleep(2 * store.GenerationLag) // another process's commit is seen after the lag
			ov := overview()
			if assembled := ov != last; assembled != s.assemble {
				t.Errorf("after %s: overview assembled again %v, want %v", s.name, assembled, s.assemble)
			}
			last = ov
		}
	})
}
