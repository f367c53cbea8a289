package sandbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
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
// while the other hosts write, the fleet's storage (every host's trees,
// `report --all-hosts`), a project add and `snapshot --all`; and the
// statements each sends (stmts/op). Then the scheduled snapshot pass of
// every host at once (pass-all-hosts): its wall time, the statements of
// all hosts, the database's time (db-ms/op, from pg_stat_statements when
// the database has it, else -1) and the p99 of the hosts' commits as they
// saw them. scripts/fleet-bench.sh runs it on a throwaway cluster, on
// loopback and 1 ms away; docs/benchmarks.md#fleet has the figures.
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
	if err := eachHost(fleet, func(r *fixture.Root) error {
		for i := range projects {
			hard := uint64(1 << 30)
			opts := sandbox.AddOptions{Workspace: sandbox.LimitChange{BytesHard: &hard}}
			if _, err := r.Manager.Add(r.Ctx, fmt.Sprintf("p%04d", i), opts); err != nil {
				return err
			}
		}
		_, err := r.Manager.Snapshot(r.Ctx, sandbox.SnapshotOptions{})
		return err
	}); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d hosts x %d projects set up in %s (hosts side by side)", hosts, projects, time.Since(start).Round(time.Second))
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
	measure("fleet-storage", same, func(m *sandbox.Manager) error {
		_, err := m.FleetStorage(first.Ctx, sandbox.FleetQuery{})
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
	b.Run("pass-all-hosts", func(b *testing.B) { benchPassAllHosts(b, fleet, first.DSN) })
}

// benchPassAllHosts runs the scheduled snapshot pass (what xfsq serve
// runs every snapshot_interval) on every host at once, each host's pass
// made due again before each round.
func benchPassAllHosts(b *testing.B, fleet []*fixture.Root, dsn string) {
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	var stmts int64
	var dbTime time.Duration
	var commits []time.Duration
	stats := true
	for b.Loop() {
		b.StopTimer()
		// An hour ago for every host: the pass is due (started_at is in µs).
		if _, err := db.ExecContext(ctx, `UPDATE passes SET started_at = started_at - 7200000000 WHERE pass = $1`, sandbox.PassSnapshot); err != nil {
			b.Fatal(err)
		}
		before := dbStatementTime(ctx, db)
		var sent int64
		for _, r := range fleet {
			st := sandbox.TestStore(r.Manager)
			sent -= st.Statements()
			st.TrackCommits()
		}
		b.StartTimer()
		err := eachHost(fleet, func(r *fixture.Root) error {
			out, err := r.Manager.RunPass(r.Ctx, sandbox.PassSnapshot)
			if err == nil && !out.Ran {
				err = fmt.Errorf("the pass did not run: %s", out.Why)
			}
			return err
		})
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range fleet {
			st := sandbox.TestStore(r.Manager)
			sent += st.Statements()
			commits = append(commits, st.Commits()...)
		}
		stmts += sent
		if after := dbStatementTime(ctx, db); before < 0 || after < 0 {
			stats = false
		} else {
			dbTime += after - before
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(stmts)/float64(b.N), "stmts/op")
	b.ReportMetric(float64(len(commits))/float64(b.N), "commits/op")
	if len(commits) > 0 {
		slices.Sort(commits)
		p99 := commits[min(len(commits)-1, len(commits)*99/100)]
		b.ReportMetric(float64(p99.Microseconds())/1000, "p99-commit-ms")
	}
	if stats {
		b.ReportMetric(float64(dbTime.Microseconds())/1000/float64(b.N), "db-ms/op")
		logTopStatements(ctx, b, db)
	} else {
		b.ReportMetric(-1, "db-ms/op")
	}
}

// dbStatementTime is the time the server spent executing this database's
// statements so far (pg_stat_statements), or -1 when it does not keep it.
func dbStatementTime(ctx context.Context, db *sql.DB) time.Duration {
	var ms float64
	err := db.QueryRowContext(ctx, `SELECT coalesce(sum(total_exec_time), 0) FROM public.pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&ms)
	if err != nil {
		return -1
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// logTopStatements logs the statements that took the most of the
// database's time so far (lock waits included), to tell where a pass's
// database time goes. Run the pass alone (BENCH='Fleet/pass') for its own.
func logTopStatements(ctx context.Context, b *testing.B, db *sql.DB) {
	rows, err := db.QueryContext(ctx, `SELECT calls, total_exec_time, rows, left(regexp_replace(query, '\s+', ' ', 'g'), 60) || ' … ' || right(regexp_replace(query, '\s+', ' ', 'g'), 240)
		FROM public.pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		ORDER BY total_exec_time DESC LIMIT 10`)
	if err != nil {
		b.Logf("top statements: %v", err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var calls, n int64
		var ms float64
		var query string
		if err := rows.Scan(&calls, &ms, &n, &query); err != nil {
			b.Logf("top statements: %v", err)
			return
		}
		b.Logf("%9.0f ms %7d calls %9d rows  %s", ms, calls, n, query)
	}
}

// eachHost runs fn for every host side by side, as hosts of a fleet do,
// and returns the first error.
func eachHost(fleet []*fixture.Root, fn func(r *fixture.Root) error) error {
	errs := make([]error, len(fleet))
	var wg sync.WaitGroup
	for i, r := range fleet {
		wg.Go(func() { errs[i] = fn(r) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
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
