package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/xfsq/xfsq/journal"
)

// JournalTotals is what a follower of the journal counts, summed in the
// database over this host's records up to UpTo (every record above it is
// for the follower to read one by one): a catch-up that sends the
// database's sums, not every record's payload (a restarted server's first
// scrape read them all, 3.6 s per 100,000 records).
type JournalTotals struct {
	// UpTo is the highest record ID summed: every followed record of this
	// host with an ID up to it is older than the horizon asked for.
	UpTo int64
	// Deletions are the settled storage.evicted records by tree.
	Deletions []DeletionTotal
	// Sweeps are the storage.swept records, oldest first, each with its
	// duration as journalled (seconds; duration_ms in the oldest form).
	Sweeps []SweptRecord
	// Walks are the timed walks of snapshot passes by tree, counted in the
	// buckets asked for.
	Walks []WalkTotal
	// LastPass is when the newest storage.snapshot record was made (zero:
	// none).
	LastPass time.Time
}

// DeletionTotal is one tree's settled deletions: how many a sweep made
// that did not fail and the bytes they freed, and how many failed.
type DeletionTotal struct {
	Project, Area string
	Swept         uint64
	SweptBytes    uint64
	Failed        uint64
}

// SweptRecord is a storage.swept record's time and duration, as written:
// DurationSeconds and DurationMS are the JSON numbers' text ("" when
// absent), for the caller to read as it reads the payload.
type SweptRecord struct {
	At                          time.Time
	DurationSeconds, DurationMS string
}

// WalkTotal is one tree's timed walks: how many, their durations'
// sum (each truncated to the nanosecond, as time.Duration holds it), and
// how many took at most each bucket's bound, in seconds (cumulative).
type WalkTotal struct {
	Project, Area string
	Count         uint64
	Sum           time.Duration
	AtMost        []uint64
}

// JournalTotals sums this host's followed records older than horizon:
// the deletions, sweeps, timed walks (counted in walkBuckets, seconds)
// and passes, in four statements after one that finds where the records
// older than horizon end (the first record at or after it: none before
// it may be uncommitted still). It reads, never writes.
func (s *Store) JournalTotals(ctx context.Context, horizon time.Time, walkBuckets []float64) (JournalTotals, error) {
	return boundedRead(ctx, s, func(ctx context.Context) (JournalTotals, error) {
		return s.journalTotals(ctx, horizon, walkBuckets)
	})
}

var totalledTypes = []journal.Type{journal.TypeEvicted, journal.TypeSwept, journal.TypeSnapshot}

func (s *Store) journalTotals(ctx context.Context, horizon time.Time, buckets []float64) (JournalTotals, error) {
	var out JournalTotals
	types := `type IN ('` + string(totalledTypes[0]) + `', '` + string(totalledTypes[1]) + `', '` + string(totalledTypes[2]) + `')`
	var firstNew, last int64
	if err := s.db.QueryRowxContext(ctx, s.db.Rebind(`SELECT
		COALESCE((SELECT MIN(id) FROM events WHERE host = ? AND `+types+` AND at >= ?), 0),
		COALESCE((SELECT MAX(id) FROM events WHERE host = ? AND `+types+`), 0)`),
		s.Host, toMicros(horizon), s.Host).Scan(&firstNew, &last); err != nil {
		return out, err
	}
	out.UpTo = last
	if firstNew > 0 {
		out.UpTo = firstNew - 1
	}
	if out.UpTo == 0 {
		return out, nil
	}
	field := func(doc, name string) string { // a JSON field's value as text (NULL when absent or null)
		if s.postgres {
			return "(" + doc + "::json ->> '" + name + "')"
		}
		return "json_extract(" + doc + ", '$." + name + "')"
	}
	raw := func(doc, name string) string { // a JSON field as written
		if s.postgres {
			return "(" + doc + "::json -> '" + name + "')::text"
		}
		return "(" + doc + " -> '$." + name + "')"
	}
	num := func(expr, typ string) string { return "CAST(" + expr + " AS " + typ + ")" }
	bigint, double := "BIGINT", "DOUBLE PRECISION"
	if !s.postgres {
		bigint, double = "INTEGER", "REAL"
	}

	// Deletions: freed_bytes, or bytes in the oldest form when it is 0.
	freed, old := num(field("payload", "freed_bytes"), bigint), num(field("payload", "bytes"), bigint)
	var dels []struct {
		Project string `db:"project"`
		Area    string `db:"area"`
		Swept   int64  `db:"swept"`
		Bytes   int64  `db:"bytes"`
		Failed  int64  `db:"failed"`
	}
	if err := s.db.SelectContext(ctx, &dels, s.db.Rebind(`SELECT project, area,
		COALESCE(SUM(CASE WHEN state <> 'failed' AND sweep_id <> '' THEN 1 ELSE 0 END), 0) AS swept,
		COALESCE(SUM(CASE WHEN state <> 'failed' AND sweep_id <> '' THEN bytes ELSE 0 END), 0) AS bytes,
		COALESCE(SUM(CASE WHEN state = 'failed' THEN 1 ELSE 0 END), 0) AS failed
		FROM (SELECT COALESCE(project, '') AS project, COALESCE(`+field("payload", "area")+`, '') AS area,
			COALESCE(`+field("payload", "state")+`, '') AS state, COALESCE(`+field("payload", "sweep_id")+`, '') AS sweep_id,
			CASE WHEN COALESCE(`+freed+`, 0) = 0 THEN COALESCE(`+old+`, 0) ELSE `+freed+` END AS bytes
			FROM events WHERE host = ? AND type = ? AND id <= ?) d
		WHERE state <> 'pending'
		GROUP BY project, area ORDER BY project, area`), s.Host, string(journal.TypeEvicted), out.UpTo); err != nil {
		return out, fmt.Errorf("sum the deletions: %w", err)
	}
	for _, d := range dels {
		out.Deletions = append(out.Deletions, DeletionTotal{Project: d.Project, Area: d.Area, Swept: uint64(d.Swept), SweptBytes: uint64(d.Bytes), Failed: uint64(d.Failed)})
	}

	var sweeps []struct {
		At      int64   `db:"at"`
		Seconds *string `db:"seconds"`
		MS      *string `db:"ms"`
	}
	if err := s.db.SelectContext(ctx, &sweeps, s.db.Rebind(`SELECT at, `+raw("payload", "duration_seconds")+` AS seconds, `+raw("payload", "duration_ms")+` AS ms
		FROM events WHERE host = ? AND type = ? AND id <= ? ORDER BY id`), s.Host, string(journal.TypeSwept), out.UpTo); err != nil {
		return out, fmt.Errorf("read the sweeps: %w", err)
	}
	for _, r := range sweeps {
		sr := SweptRecord{At: fromMicros(r.At)}
		if r.Seconds != nil {
			sr.DurationSeconds = *r.Seconds
		}
		if r.MS != nil {
			sr.DurationMS = *r.MS
		}
		out.Sweeps = append(out.Sweeps, sr)
	}

	// Walks: each tree's duration_seconds as time.Duration holds it
	// (truncated to the nanosecond), compared with each bound as
	// Duration.Seconds() gives it.
	var trees, tree string
	if s.postgres {
		trees = `events e CROSS JOIN LATERAL json_array_elements(CASE WHEN json_typeof(e.payload::json -> 'trees') = 'array'
			THEN e.payload::json -> 'trees' ELSE '[]'::json END) AS t(v)`
		tree = "t.v"
	} else {
		trees = `events e, json_each(e.payload, '$.trees') AS t`
		tree = "t.value"
	}
	ns := "CAST(" + num(field(tree, "duration_seconds"), double) + " * 1000000000.0 AS " + bigint + ")"
	if s.postgres {
		ns = "CAST(trunc(" + num(field(tree, "duration_seconds"), double) + " * CAST(1000000000 AS DOUBLE PRECISION)) AS BIGINT)"
	}
	secs := "(CAST(ns / 1000000000 AS " + double + ") + CAST(ns % 1000000000 AS " + double + ") / CAST(1000000000 AS " + double + "))"
	var atMost strings.Builder
	args := []any{}
	for i, b := range buckets {
		fmt.Fprintf(&atMost, ", SUM(CASE WHEN %s <= CAST(? AS %s) THEN 1 ELSE 0 END) AS b%d", secs, double, i)
		args = append(args, b)
	}
	args = append(args, s.Host, string(journal.TypeSnapshot), out.UpTo)
	rows, err := s.db.QueryContext(ctx, s.db.Rebind(`SELECT project, area, COUNT(*), SUM(ns)`+atMost.String()+`
		FROM (SELECT COALESCE(`+field(tree, "project")+`, '') AS project, COALESCE(`+field(tree, "area")+`, '') AS area, `+ns+` AS ns
			FROM `+trees+` WHERE e.host = ? AND e.type = ? AND e.id <= ? AND `+field(tree, "duration_seconds")+` IS NOT NULL) w
		GROUP BY project, area ORDER BY project, area`), args...)
	if err != nil {
		return out, fmt.Errorf("sum the walks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		w := WalkTotal{AtMost: make([]uint64, len(buckets))}
		var sum int64
		dest := []any{&w.Project, &w.Area, &w.Count, &sum}
		for i := range w.AtMost {
			dest = append(dest, &w.AtMost[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return out, fmt.Errorf("sum the walks: %w", err)
		}
		w.Sum = time.Duration(sum)
		out.Walks = append(out.Walks, w)
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("sum the walks: %w", err)
	}

	var lastPass int64
	if err := s.db.GetContext(ctx, &lastPass, s.db.Rebind(`SELECT COALESCE(MAX(at), 0) FROM events WHERE host = ? AND type = ? AND id <= ?`),
		s.Host, string(journal.TypeSnapshot), out.UpTo); err != nil {
		return out, err
	}
	out.LastPass = fromMicros(lastPass)
	return out, nil
}
