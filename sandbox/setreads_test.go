package sandbox_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// The reads of a host's trees — report, a cold overview, a sweep's plan,
// a snapshot pass — send the same number of statements for 10 projects as
// for 100: a statement per tree was a round trip per tree to a shared
// PostgreSQL (~12,000 for a report of 1,003 projects). A snapshot pass
// and a sweep's plan (which walks every tree on the fallback) record their
// walks in batches (store.BeginWalks, then the baselines in one
// transaction), a constant number of statements each: with one batch for
// the whole pass, they send as many for 300 trees as for 30 (a pass sent
// 19 a tree, a plan 15).
func TestHostReadsAreSetBased(t *testing.T) {
	// One probe of the database's generation per read, however long the
	// read takes: another process's commits are not what is counted here.
	lag := store.GenerationLag
	store.GenerationLag = time.Hour
	t.Cleanup(func() { store.GenerationLag = lag })
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		// One batch for the whole pass, however slowly the machine walks.
		sandbox.WalkBatches(t, 1000, time.Hour)
		reads := []struct {
			name string
			run  func(m *sandbox.Manager) error
		}{
			{"report", func(m *sandbox.Manager) error { _, err := m.Report(r.Ctx); return err }},
			{"overview", func(m *sandbox.Manager) error {
				_, err := m.Overview(r.Ctx, sandbox.OverviewOptions{})
				return err
			}},
			{"sweep plan", func(m *sandbox.Manager) error {
				_, err := m.Sweep(r.Ctx, sandbox.SweepOptions{DryRun: true})
				return err
			}},
			{"snapshot pass", func(m *sandbox.Manager) error {
				_, err := m.Snapshot(r.Ctx, sandbox.SnapshotOptions{})
				return err
			}},
		}
		counts := map[string][]int64{}
		added := 0
		for _, n := range []int{10, 100} {
			for ; added < n; added++ {
				r.Add(1<<20, fmt.Sprintf("p%03d", added))
			}
			// Every tree snapshotted: growth, activity and top paths read.
			if _, err := r.Manager.Snapshot(r.Ctx, sandbox.SnapshotOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, rd := range reads {
				counts[rd.name] = append(counts[rd.name], statementsOf(t, r.Reopen().Manager, rd.run)) // cold: nothing kept
			}
		}
		for _, rd := range reads {
			c := counts[rd.name]
			t.Logf("%s: %d statements for 10 projects, %d for 100", rd.name, c[0], c[1])
			if c[1] != c[0] {
				t.Errorf("%s: %d statements for 10 projects, %d for 100: a statement per tree", rd.name, c[0], c[1])
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
