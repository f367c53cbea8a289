package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
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
		var out JournalTotals
		err := s.withoutJIT(ctx, func(db sqlx.QueryerContext) (err error) {
			out, err = s.journalTotals(ctx, db, horizon, walkBuckets)
			return err
		})
		return out, err
	})
}

var totalledTypes = []journal.Type{journal.TypeEvicted, journal.TypeSwept, journal.TypeSnapshot}

func (s *Store) journalTotals(ctx context.Context, db sqlx.QueryerContext, horizon time.Time, buckets []float64) (JournalTotals, error) {
	var out JournalTotals
	types := `type IN ('` + string(totalledTypes[0]) + `', '` + string(totalledTypes[1]) + `', '` + string(totalledTypes[2]) + `')`
	var firstNew, last int64
	if err := db.QueryRowxContext(ctx, s.db.Rebind(`SELECT
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
		if s.postgres { // doc is jsonb: parsed once a record, not once a field
			return "(" + doc + " ->> '" + name + "')"
		}
		return "json_extract(" + doc + ", '$." + name + "')"
	}
	raw := func(doc, name string) string { // a JSON field as written
		if s.postgres { // jsonb keeps a number's decimal value exactly
			return "(" + doc + " -> '" + name + "')::text"
		}
		return "(" + doc + " -> '$." + name + "')"
	}
	num := func(expr, typ string) string { return "CAST(" + expr + " AS " + typ + ")" }
	bigint, double := "BIGINT", "DOUBLE PRECISION"
	if !s.postgres {
		bigint, double = "INTEGER", "REAL"
	}

	// Each record's payload as a document: parsed once (jsonb; OFFSET 0
	// keeps PostgreSQL from parsing it again for each field).
	doc, fence := "payload", ""
	if s.postgres {
		doc, fence = "payload::jsonb", " OFFSET 0"
	}

	// Deletions: freed_bytes, or bytes in the oldest form when it is 0.
	freed, old := num(field("p", "freed_bytes"), bigint), num(field("p", "bytes"), bigint)
	var dels []struct {
		Project string `db:"project"`
		Area    string `db:"area"`
		Swept   int64  `db:"swept"`
		Bytes   int64  `db:"bytes"`
		Failed  int64  `db:"failed"`
	}
	if err := sqlx.SelectContext(ctx, db, &dels, s.db.Rebind(`SELECT project, area,
		COALESCE(SUM(CASE WHEN state <> 'failed' AND sweep_id <> '' THEN 1 ELSE 0 END), 0) AS swept,
		COALESCE(SUM(CASE WHEN state <> 'failed' AND sweep_id <> '' THEN bytes ELSE 0 END), 0) AS bytes,
		COALESCE(SUM(CASE WHEN state = 'failed' THEN 1 ELSE 0 END), 0) AS failed
		FROM (SELECT COALESCE(project, '') AS project, COALESCE(`+field("p", "area")+`, '') AS area,
			COALESCE(`+field("p", "state")+`, '') AS state, COALESCE(`+field("p", "sweep_id")+`, '') AS sweep_id,
			CASE WHEN COALESCE(`+freed+`, 0) = 0 THEN COALESCE(`+old+`, 0) ELSE `+freed+` END AS bytes
			FROM (SELECT project, `+doc+` AS p FROM events WHERE host = ? AND type = ? AND id <= ?`+fence+`) e) d
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
	if err := sqlx.SelectContext(ctx, db, &sweeps, s.db.Rebind(`SELECT at, `+raw("p", "duration_seconds")+` AS seconds, `+raw("p", "duration_ms")+` AS ms
		FROM (SELECT id, at, `+doc+` AS p FROM events WHERE host = ? AND type = ? AND id <= ?`+fence+`) e ORDER BY id`), s.Host, string(journal.TypeSwept), out.UpTo); err != nil {
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
	// (truncated to the nanosecond), put in the first bucket whose bound
	// it does not pass as Duration.Seconds() gives it (len(buckets): none),
	// then counted and summed by tree and bucket.
	var src string
	if s.postgres {
		src = `(SELECT payload::jsonb -> 'trees' AS trees FROM events WHERE host = ? AND type = ? AND id <= ? OFFSET 0) e
			CROSS JOIN LATERAL jsonb_to_recordset(CASE WHEN jsonb_typeof(e.trees) = 'array' THEN e.trees ELSE '[]'::jsonb END)
				AS t(project TEXT, area TEXT, duration_seconds DOUBLE PRECISION)
			WHERE t.duration_seconds IS NOT NULL OFFSET 0`
		src = `SELECT COALESCE(t.project, '') AS project, COALESCE(t.area, '') AS area,
			CAST(trunc(t.duration_seconds * CAST(1000000000 AS DOUBLE PRECISION)) AS BIGINT) AS ns FROM ` + src
	} else {
		src = `SELECT COALESCE(json_extract(t.value, '$.project'), '') AS project, COALESCE(json_extract(t.value, '$.area'), '') AS area,
			CAST(CAST(json_extract(t.value, '$.duration_seconds') AS REAL) * 1000000000.0 AS INTEGER) AS ns
			FROM events e, json_each(e.payload, '$.trees') AS t
			WHERE e.host = ? AND e.type = ? AND e.id <= ? AND json_extract(t.value, '$.duration_seconds') IS NOT NULL`
	}
	secs := "(CAST(ns / 1000000000 AS " + double + ") + CAST(ns % 1000000000 AS " + double + ") / CAST(1000000000 AS " + double + "))"
	var bucket strings.Builder
	bucket.WriteString("CASE")
	var args []any
	for i, b := range buckets {
		fmt.Fprintf(&bucket, " WHEN %s <= CAST(? AS %s) THEN %d", secs, double, i)
		args = append(args, b)
	}
	fmt.Fprintf(&bucket, " ELSE %d END", len(buckets))
	args = append(args, s.Host, string(journal.TypeSnapshot), out.UpTo)
	rows, err := db.QueryContext(ctx, s.db.Rebind(`SELECT project, area, bucket, COUNT(*), SUM(ns)
		FROM (SELECT project, area, ns, `+bucket.String()+` AS bucket FROM (`+src+`) x) w
		GROUP BY project, area, bucket ORDER BY project, area, bucket`), args...)
	if err != nil {
		return out, fmt.Errorf("sum the walks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var project, area string
		var b int
		var count uint64
		var sum int64
		if err := rows.Scan(&project, &area, &b, &count, &sum); err != nil {
			return out, fmt.Errorf("sum the walks: %w", err)
		}
		if n := len(out.Walks); n == 0 || out.Walks[n-1].Project != project || out.Walks[n-1].Area != area {
			out.Walks = append(out.Walks, WalkTotal{Project: project, Area: area, AtMost: make([]uint64, len(buckets))})
		}
		w := &out.Walks[len(out.Walks)-1]
		w.Count += count
		w.Sum += time.Duration(sum)
		for i := b; i < len(buckets); i++ { // cumulative
			w.AtMost[i] += count
		}
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("sum the walks: %w", err)
	}

	var lastPass int64
	if err := sqlx.GetContext(ctx, db, &lastPass, s.db.Rebind(`SELECT COALESCE(MAX(at), 0) FROM events WHERE host = ? AND type = ? AND id <= ?`),
		s.Host, string(journal.TypeSnapshot), out.UpTo); err != nil {
		return out, err
	}
	out.LastPass = fromMicros(lastPass)
	return out, nil
}
