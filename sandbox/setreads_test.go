package sandbox_test

import (
	"fmt"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/sandbox"
)

// The reads of a host's trees — report, a cold overview, a sweep's plan,
// a snapshot pass — send the same number of statements for 10 projects as
// for 100: a statement per tree was a round trip per tree to a shared
// PostgreSQL (~12,000 for a report of 1,003 projects).
func TestHostReadsAreSetBased(t *testing.T) {
	reads := []struct {
		name string
		run  func(r *fixture.Root, m *sandbox.Manager) error
	}{
		{"report", func(r *fixture.Root, m *sandbox.Manager) error { _, err := m.Report(r.Ctx); return err }},
		{"overview", func(r *fixture.Root, m *sandbox.Manager) error {
			_, err := m.Overview(r.Ctx, sandbox.OverviewOptions{})
			return err
		}},
		{"sweep plan", func(r *fixture.Root, m *sandbox.Manager) error {
			_, err := m.Sweep(r.Ctx, sandbox.SweepOptions{DryRun: true})
			return err
		}},
	}
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
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
				m := r.Reopen().Manager // cold: nothing kept from before
				before := m.Store.Statements()
				if err := rd.run(r, m); err != nil {
					t.Fatalf("%s of %d projects: %v", rd.name, n, err)
				}
				counts[rd.name] = append(counts[rd.name], m.Store.Statements()-before)
			}
		}
		for name, c := range counts {
			t.Logf("%s: %d statements for 10 projects, %d for 100", name, c[0], c[1])
			if c[0] != c[1] {
				t.Errorf("%s: %d statements for 10 projects, %d for 100: a read per tree", name, c[0], c[1])
			}
		}
	})
}
