package sandbox_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/sandbox"
)

// BenchmarkFleet is a fleet on one PostgreSQL (XFSQ_TEST_POSTGRES):
// XFSQ_BENCH_HOSTS hosts (default 10), each a fallback root in this
// process with XFSQ_BENCH_PROJECTS projects (default 1,000) of three empty
// trees, every tree snapshotted once. It measures, on the first host:
// report, a cold overview (assembled from the store), the warm overview
// while the other hosts write, a project add and `snapshot --all`; and the
// statements each sends (stmts/op). docs/benchmarks.md#fleet says how to
// run it against a PostgreSQL 1 ms away.
//
//	XFSQ_TEST_POSTGRES=... go test ./sandbox -run '^$' -bench Fleet -benchtime 5x -timeout 2h
func BenchmarkFleet(b *testing.B) {
	hosts, projects := envInt(b, "XFSQ_BENCH_HOSTS", 10), envInt(b, "XFSQ_BENCH_PROJECTS", 1000)
	first := fixture.New(b, "postgres", storetest.Postgres(b))
	fleet := []*fixture.Root{first}
	for h := 1; h < hosts; h++ {
		fleet = append(fleet, first.OtherHost(fmt.Sprintf("bench-host-%02d", h)))
	}
	start := time.Now()
	for _, r := range fleet {
		for i := range projects {
			r.Add(1<<30, fmt.Sprintf("p%04d", i))
		}
		if _, err := r.Manager.Snapshot(r.Ctx, sandbox.SnapshotOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%d hosts x %d projects set up in %s", hosts, projects, time.Since(start).Round(time.Second))
	m := first.Manager
	measure := func(name string, setup func() *sandbox.Manager, run func(m *sandbox.Manager) error) {
		b.Run(name, func(b *testing.B) {
			var stmts int64
			for b.Loop() {
				b.StopTimer()
				m := setup()
				b.StartTimer()
				before := sandbox.TestStore(m).Statements()
				if err := run(m); err != nil {
					b.Fatal(err)
				}
				stmts += sandbox.TestStore(m).Statements() - before
			}
			b.ReportMetric(float64(stmts)/float64(b.N), "stmts/op")
		})
	}
	same := func() *sandbox.Manager { return m }
	cold := func() *sandbox.Manager { return first.Reopen().Manager }
	measure("report", same, func(m *sandbox.Manager) error { _, err := m.Report(first.Ctx); return err })
	measure("overview-cold", cold, func(m *sandbox.Manager) error {
		_, err := m.Overview(first.Ctx, sandbox.OverviewOptions{})
		return err
	})
	other, n := fleet[len(fleet)-1], 0
	measure("overview-warm-others-writing", func() *sandbox.Manager {
		// Another host's write: it must not make this host's answer a rebuild.
		n++
		other.Add(1<<30, fmt.Sprintf("w%06d", n))
		time.Sleep(2 * time.Millisecond) // past GenerationLag
		return m
	}, func(m *sandbox.Manager) error {
		_, err := m.Overview(first.Ctx, sandbox.OverviewOptions{MaxAge: time.Hour})
		return err
	})
	added := 0
	measure("add", same, func(m *sandbox.Manager) error {
		added++
		_, err := m.Add(first.Ctx, fmt.Sprintf("a%06d", added), sandbox.AddOptions{})
		return err
	})
	measure("snapshot-all", same, func(m *sandbox.Manager) error {
		_, err := m.Snapshot(first.Ctx, sandbox.SnapshotOptions{})
		return err
	})
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: use a positive number", name, v)
	}
	return n
}
