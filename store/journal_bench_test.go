package store

import (
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/journal"
)

// BenchmarkBesideAMillionEvents is a host's store work beside a fleet's
// journal on PostgreSQL (XFSQ_TEST_POSTGRES): first with an empty events
// table, then with XFSQ_BENCH_EVENTS (default 1,000,000) records of nine
// other hosts. "start" is what every command's start asks of the store
// (Open: connect and check the schema; Blank; Close); "settle" reads this
// host's pending deletions and settles one (what a sweep or serve's start
// does first). Issue 36's goals: the start ≤ 20 ms more than beside none,
// settling ≤ 10 ms. docs/benchmarks.md#fleet has the figures.
//
//	XFSQ_TEST_POSTGRES=... go test ./store -run '^$' -bench BesideAMillionEvents -benchtime 20x -count 3
func BenchmarkBesideAMillionEvents(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("XFSQ_BENCH_EVENTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatalf("XFSQ_BENCH_EVENTS=%q: %v", v, err)
		}
	}
	dsn := storetest.Postgres(b)
	s := open(b, dsn)
	if err := s.InTx(ctx, func(tx *Tx) error {
		return tx.AppendEvent(ctx, "omni", "op", journal.SettingChanged{Key: "k"})
	}); err != nil {
		b.Fatal(err)
	}
	run := func(label string) {
		b.Run("start/"+label, func(b *testing.B) {
			for b.Loop() {
				o, err := Open(ctx, dsn, "host-a")
				if err != nil {
					b.Fatal(err)
				}
				if blank, err := o.Blank(ctx); err != nil || blank {
					b.Fatalf("blank %v %v", blank, err)
				}
				o.Close()
			}
		})
		i := 0
		b.Run("settle/"+label, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				i++
				rec := journal.Evicted{SweepID: "bench", Area: "cache", Path: fmt.Sprintf("cache/omni/%s-%d", label, i), State: journal.StatePending}
				if err := s.InTx(ctx, func(tx *Tx) error { return tx.AppendEvent(ctx, "omni", "op", rec) }); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				pending, err := s.PendingEvictions(ctx)
				if err != nil || len(pending) != 1 {
					b.Fatalf("pending: %d %v", len(pending), err)
				}
				rec.State = journal.StateDone
				if settled, err := s.SettlePending(ctx, "omni", "op", rec); err != nil || !settled {
					b.Fatalf("settle: %v %v", settled, err)
				}
			}
		})
	}
	run("events=0")
	start := time.Now()
	// Outside the store: its statement timeout is for a host's own work.
	raw, err := sql.Open("postgres", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	for from := 0; from < n; from += 100_000 {
		if _, err := raw.Exec(`INSERT INTO events (at, type, host, project, actor, payload)
			SELECT g, 'storage.evicted', 'host-' || (g % 9), 'p' || (g % 1000), 'op', '{"state":"done"}' FROM generate_series($1::bigint, $2::bigint) g`,
			from+1, min(from+100_000, n)); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := raw.Exec(`ANALYZE events`); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d events of other hosts written in %s", n, time.Since(start).Round(time.Millisecond))
	run(fmt.Sprintf("events=%d", n))
}
