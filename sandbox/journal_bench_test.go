package sandbox_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox"
)

// BenchmarkJournalCatchUp is a restarted server's first journal read (its
// first metrics scrape) on PostgreSQL: XFSQ_BENCH_EVENTS records (default
// 100,000) of this host, older than the settle horizon — 98 % settled
// deletions over 3,000 trees, 1 % sweeps, 1 % snapshot passes of 300 timed
// walks each — the host's journal checkpoint written after all but the
// last journalledSince of them. "checkpoint" is the collector's first
// read: the checkpoint, then the records after it summed in the database;
// "summed" the same without a checkpoint (a host whose server never
// wrote one), the whole journal summed; "one-by-one" reads every record
// through the cursor, 1,000 a page, as the first read did before either.
//
//	XFSQ_TEST_POSTGRES=... go test ./sandbox -run '^$' -bench JournalCatchUp -benchtime 3x -count 3
func BenchmarkJournalCatchUp(b *testing.B) {
	const journalledSince = 1_000 // a busy host's few minutes
	n := envInt(b, "XFSQ_BENCH_EVENTS", 100_000)
	r := fixture.New(b, "postgres", storetest.Postgres(b))
	raw, err := sql.Open("postgres", r.DSN)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	start := time.Now()
	journalBenchEvents(b, r, raw, 1, n-journalledSince, time.Hour)
	buckets := sandbox.JournalBuckets{Walks: []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300}, Sweeps: []float64{0.1, 0.5, 1, 5, 15, 60, 300, 900, 1800, 3600}}
	if moved, err := r.Manager.CheckpointJournal(r.Ctx, buckets); err != nil || !moved {
		b.Fatalf("checkpoint: %v %v", moved, err)
	}
	journalBenchEvents(b, r, raw, n-journalledSince+1, n, 30*time.Minute)
	b.Logf("%d events written in %s", n, time.Since(start).Round(time.Millisecond))
	for _, c := range []struct {
		name    string
		buckets sandbox.JournalBuckets
	}{{"checkpoint", buckets}, {"summed", buckets}, {"one-by-one", sandbox.JournalBuckets{}}} {
		if c.name == "summed" {
			if _, err := raw.Exec(`DELETE FROM journal_checkpoints`); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				cur := sandbox.JournalCursor{Buckets: c.buckets}
				news, err := r.Manager.ReadJournal(r.Ctx, &cur)
				if err != nil {
					b.Fatal(err)
				}
				if got := int(news.SweepTotals.Count) + len(news.Sweeps); got != n/100 {
					b.Fatalf("%d sweeps, want %d", got, n/100)
				}
			}
		})
	}
}

// journalBenchEvents journals records from to to of the benchmark's
// journal (each record's kind by its number), age old.
func journalBenchEvents(b *testing.B, r *fixture.Root, raw *sql.DB, from, to int, age time.Duration) {
	host := sandbox.TestStore(r.Manager).Host
	pass := journal.Snapshot{}
	for i := range 300 {
		d := 0.001 * float64(i+1)
		pass.Trees = append(pass.Trees, journal.SnapshotTree{Project: fmt.Sprintf("p%04d", i), Area: "workspace", SizeBytes: 4096, DurationSeconds: &d})
	}
	passJSON, err := json.Marshal(pass)
	if err != nil {
		b.Fatal(err)
	}
	old := time.Now().Add(-age).UnixMicro()
	if _, err := raw.Exec(`INSERT INTO events (at, type, host, project, actor, payload)
		SELECT $1::bigint + g,
			CASE WHEN g % 100 = 0 THEN 'storage.swept' WHEN g % 100 = 1 THEN 'storage.snapshot' ELSE 'storage.evicted' END,
			$2, CASE WHEN g % 100 < 2 THEN '' ELSE 'p' || (g % 1000) END, 'op',
			CASE WHEN g % 100 = 0 THEN '{"sweep_id":"s","freed_bytes":1,"duration_seconds":1.25}'
				WHEN g % 100 = 1 THEN $3
				ELSE '{"sweep_id":"s","area":"' || (ARRAY['workspace','cache','scratch'])[g % 3 + 1] || '","path":"x","freed_bytes":' || g ||
					',"state":"' || CASE WHEN g % 50 = 7 THEN 'failed' ELSE 'done' END || '"}' END
		FROM generate_series($4::bigint, $5::bigint) g`, old, host, string(passJSON), from, to); err != nil {
		b.Fatal(err)
	}
	if _, err := raw.Exec(`ANALYZE events`); err != nil {
		b.Fatal(err)
	}
}
