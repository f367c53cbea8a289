package eventlog

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/store/internal/base"
)

// JournalTotals is what a follower of the journal counts, summed in the
// database over this host's records up to UpTo (every record above it is
// for the follower to read one by one): a catch-up that sends the
// database's sums, not every record's payload (a restarted server's first
// scrape read them all, 3.6 s per 100,000 records). The sums begin at the
// host's checkpoint when it has one in the same buckets (From): only the
// records after it are summed.
type JournalTotals struct {
	// From is the checkpoint's position the totals began at (0: none,
	// every record was summed).
	From int64
	// UpTo is the highest record ID summed: every followed record of this
	// host with an ID up to it is older than the horizon asked for.
	UpTo int64
	// Buckets are the histograms' bounds.
	Buckets JournalBuckets
	// Deletions are the settled storage.evicted records by tree.
	Deletions []DeletionTotal
	// Sweeps are the storage.swept records' durations, as journalled
	// (duration_ms in the oldest form), rounded to the nanosecond.
	Sweeps Histogram
	// Walks are the timed walks of snapshot passes by tree.
	Walks []WalkTotal
	// LastPass is when the newest storage.snapshot record was made (zero:
	// none).
	LastPass time.Time
	// Unreadable counts the storage.swept records summed whose duration is
	// not a number: they are not counted.
	Unreadable int

	more bool // records older than the horizon remain past UpTo (journalTotals' span)
}

// JournalBuckets are the histograms' upper bounds, in seconds, ascending,
// as Duration.Seconds() compares with them.
type JournalBuckets struct {
	Walks  []float64 `json:"walks"`
	Sweeps []float64 `json:"sweeps"`
}

// DeletionTotal is one tree's settled deletions: how many a sweep made
// that did not fail and the bytes they freed, and how many failed.
type DeletionTotal struct {
	Project    string `json:"p"`
	Area       string `json:"a"`
	Swept      uint64 `json:"swept"`
	SweptBytes uint64 `json:"bytes"`
	Failed     uint64 `json:"failed"`
}

// Histogram is durations counted: how many, their sum, and how many took
// at most each bucket's bound (cumulative).
type Histogram struct {
	Count  uint64        `json:"n"`
	Sum    time.Duration `json:"sum"`
	AtMost []uint64      `json:"le"`
}

// WalkTotal is one tree's timed walks, each duration truncated to the
// nanosecond, as time.Duration holds it.
type WalkTotal struct {
	Project string `json:"p"`
	Area    string `json:"a"`
	Histogram
}

// JournalTotals sums this host's followed records older than horizon:
// the deletions, sweeps, timed walks and passes, counted in buckets, from
// the host's checkpoint in those buckets when there is one. It reads,
// never writes.
func (s *Store) JournalTotals(ctx context.Context, horizon time.Time, buckets JournalBuckets) (JournalTotals, error) {
	return s.journalTotalsWithin(ctx, horizon, buckets, 0)
}

// journalTotalsWithin is JournalTotals summing at most span IDs past the
// checkpoint (0: all up to the horizon).
func (s *Store) journalTotalsWithin(ctx context.Context, horizon time.Time, buckets JournalBuckets, span int64) (JournalTotals, error) {
	return base.BoundedRead(ctx, s.DB, func(ctx context.Context) (JournalTotals, error) {
		var out JournalTotals
		err := s.WithoutJIT(ctx, func(db sqlx.QueryerContext) error {
			base, _, err := s.journalCheckpoint(ctx, db, buckets)
			if err != nil {
				return err
			}
			news, err := s.journalTotals(ctx, db, base.UpTo, horizon, buckets, span)
			if err != nil {
				return err
			}
			out = base.plus(news)
			return nil
		})
		return out, err
	})
}

var totalledTypes = []journal.Type{journal.TypeEvicted, journal.TypeSwept, journal.TypeSnapshot}

// TotalledIn is totalledTypes as SQL.
var TotalledIn = `type IN ('` + string(totalledTypes[0]) + `', '` + string(totalledTypes[1]) + `', '` + string(totalledTypes[2]) + `')`

// journalSpan is the records a sum reads: IDs above from, up to upTo.
type journalSpan struct{ from, upTo int64 }

// where is the span as a condition on the ID column col, and its
// arguments. From the journal's start it is the upper bound alone: a lower
// bound of 0 led PostgreSQL to read the host's whole (host, id) range for
// each record type rather than the type's records.
func (sp journalSpan) where(col string) (string, []any) {
	if sp.from == 0 {
		return col + " <= ?", []any{sp.upTo}
	}
	return col + " > ? AND " + col + " <= ?", []any{sp.from, sp.upTo}
}

// after is the condition that a record's ID col is above from (none from
// the journal's start, as where), and its arguments.
func after(col string, from int64) (string, []any) {
	if from == 0 {
		return "", nil
	}
	return " AND " + col + " > ?", []any{from}
}

// journalTotals sums the followed records after from and older than
// horizon (at most span IDs of them; 0: all), in four statements after one
// that finds where the records older than horizon end (the first record at
// or after it: none before it may be uncommitted still).
func (s *Store) journalTotals(ctx context.Context, db sqlx.QueryerContext, from int64, horizon time.Time, buckets JournalBuckets, span int64) (JournalTotals, error) {
	out := JournalTotals{From: from, UpTo: from, Buckets: buckets}
	var firstNew, last int64
	above, args := after("id", from)
	if err := db.QueryRowxContext(ctx, s.SQL.Rebind(`SELECT
		COALESCE((SELECT MIN(id) FROM events WHERE host = ?`+above+` AND `+TotalledIn+` AND at >= ?), 0),
		COALESCE((SELECT MAX(id) FROM events WHERE host = ?`+above+` AND `+TotalledIn+`), 0)`),
		slices.Concat([]any{s.Host}, args, []any{base.ToMicros(horizon), s.Host}, args)...).Scan(&firstNew, &last); err != nil {
		return out, err
	}
	out.UpTo = max(from, last)
	if firstNew > 0 {
		out.UpTo = firstNew - 1
	}
	if span > 0 && out.UpTo > from+span {
		out.UpTo, out.more = from+span, true
	}
	ids := journalSpan{from, out.UpTo}
	if ids.upTo <= ids.from {
		return out, nil
	}
	var err error
	if out.Deletions, err = s.sumDeletions(ctx, db, ids); err != nil {
		return out, fmt.Errorf("sum the deletions: %w", err)
	}
	if out.Sweeps, out.Unreadable, err = s.sumSweeps(ctx, db, ids, buckets.Sweeps); err != nil {
		return out, fmt.Errorf("read the sweeps: %w", err)
	}
	if out.Walks, err = s.sumWalks(ctx, db, ids, buckets.Walks); err != nil {
		return out, fmt.Errorf("sum the walks: %w", err)
	}
	var lastPass int64
	in, args := ids.where("id")
	if err := sqlx.GetContext(ctx, db, &lastPass, s.SQL.Rebind(`SELECT COALESCE(MAX(at), 0) FROM events WHERE host = ? AND type = ? AND `+in),
		slices.Concat([]any{s.Host, string(journal.TypeSnapshot)}, args)...); err != nil {
		return out, err
	}
	out.LastPass = base.FromMicros(lastPass)
	return out, nil
}

// jsonField is a JSON field's value as text (NULL when absent or null).
func (s *Store) jsonField(doc, name string) string {
	if s.Postgres { // doc is jsonb: parsed once a record, not once a field
		return "(" + doc + " ->> '" + name + "')"
	}
	return "json_extract(" + doc + ", '$." + name + "')"
}

// jsonRaw is a JSON field as written.
func (s *Store) jsonRaw(doc, name string) string {
	if s.Postgres { // jsonb keeps a number's decimal value exactly
		return "(" + doc + " -> '" + name + "')::text"
	}
	return "(" + doc + " -> '$." + name + "')"
}

// spanDocs selects the span's records of type typ, with cols and each
// payload as a document p: parsed once (jsonb; OFFSET 0 keeps PostgreSQL
// from parsing it again for each field). It returns the select's
// arguments.
func (s *Store) spanDocs(cols string, typ journal.Type, span journalSpan) (string, []any) {
	doc, fence := "payload", ""
	if s.Postgres {
		doc, fence = "payload::jsonb", " OFFSET 0"
	}
	in, args := span.where("id")
	return `(SELECT ` + cols + `, ` + doc + ` AS p FROM events WHERE host = ? AND type = ? AND ` + in + fence + `) e`,
		slices.Concat([]any{s.Host, string(typ)}, args)
}

// sumDeletions: each tree's settled deletions; a record's size is
// freed_bytes, or bytes in the oldest form when that is 0.
func (s *Store) sumDeletions(ctx context.Context, db sqlx.QueryerContext, span journalSpan) ([]DeletionTotal, error) {
	bigint := "BIGINT"
	if !s.Postgres {
		bigint = "INTEGER"
	}
	num := func(expr string) string { return "CAST(" + expr + " AS " + bigint + ")" }
	freed, old := num(s.jsonField("p", "freed_bytes")), num(s.jsonField("p", "bytes"))
	docs, args := s.spanDocs("project", journal.TypeEvicted, span)
	var dels []struct {
		Project string `db:"project"`
		Area    string `db:"area"`
		Swept   int64  `db:"swept"`
		Bytes   int64  `db:"bytes"`
		Failed  int64  `db:"failed"`
	}
	if err := sqlx.SelectContext(ctx, db, &dels, s.SQL.Rebind(`SELECT project, area,
		COALESCE(SUM(CASE WHEN state <> 'failed' AND sweep_id <> '' THEN 1 ELSE 0 END), 0) AS swept,
		COALESCE(SUM(CASE WHEN state <> 'failed' AND sweep_id <> '' THEN bytes ELSE 0 END), 0) AS bytes,
		COALESCE(SUM(CASE WHEN state = 'failed' THEN 1 ELSE 0 END), 0) AS failed
		FROM (SELECT COALESCE(project, '') AS project, COALESCE(`+s.jsonField("p", "area")+`, '') AS area,
			COALESCE(`+s.jsonField("p", "state")+`, '') AS state, COALESCE(`+s.jsonField("p", "sweep_id")+`, '') AS sweep_id,
			CASE WHEN COALESCE(`+freed+`, 0) = 0 THEN COALESCE(`+old+`, 0) ELSE `+freed+` END AS bytes
			FROM `+docs+`) d
		WHERE state <> 'pending'
		GROUP BY project, area ORDER BY project, area`), args...); err != nil {
		return nil, err
	}
	var out []DeletionTotal
	for _, d := range dels {
		out = append(out, DeletionTotal{Project: d.Project, Area: d.Area, Swept: uint64(d.Swept), SweptBytes: uint64(d.Bytes), Failed: uint64(d.Failed)})
	}
	return out, nil
}

// sumSweeps counts the sweeps' durations in buckets, each read from its
// text as journal.Swept reads its JSON (duration_ms in the oldest form,
// when duration_seconds is absent or 0); it returns how many it could not
// read.
func (s *Store) sumSweeps(ctx context.Context, db sqlx.QueryerContext, span journalSpan, buckets []float64) (Histogram, int, error) {
	h := Histogram{AtMost: make([]uint64, len(buckets))}
	var sweeps []struct {
		Seconds *string `db:"seconds"`
		MS      *string `db:"ms"`
	}
	docs, args := s.spanDocs("id", journal.TypeSwept, span)
	if err := sqlx.SelectContext(ctx, db, &sweeps, s.SQL.Rebind(`SELECT `+s.jsonRaw("p", "duration_seconds")+` AS seconds, `+s.jsonRaw("p", "duration_ms")+` AS ms
		FROM `+docs+` ORDER BY id`), args...); err != nil {
		return h, 0, err
	}
	unreadable := 0
	for _, r := range sweeps {
		d, err := sweptDuration(r.Seconds, r.MS)
		if err != nil {
			unreadable++
			continue
		}
		h.observe(d, buckets)
	}
	return h, unreadable, nil
}

// sweptDuration is a storage.swept record's duration from its fields'
// JSON text (nil: absent).
func sweptDuration(seconds, ms *string) (time.Duration, error) {
	secs, err := jsonNumber(seconds, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
	if err != nil {
		return 0, err
	}
	millis, err := jsonNumber(ms, func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) })
	if err != nil {
		return 0, err
	}
	if secs == 0 && ms != nil && *ms != "null" {
		secs = float64(millis) / 1000
	}
	return time.Duration(math.Round(secs * float64(time.Second))), nil
}

// jsonNumber reads a JSON value's text as encoding/json reads it into a
// number: absent or null is zero.
func jsonNumber[T int64 | float64](text *string, parse func(string) (T, error)) (T, error) {
	if text == nil || *text == "" || *text == "null" {
		return 0, nil
	}
	return parse(*text)
}

// observe counts d, in the first bucket whose bound it does not pass.
func (h *Histogram) observe(d time.Duration, buckets []float64) {
	h.Count++
	h.Sum += d
	v := d.Seconds()
	for i, b := range buckets {
		if v <= b {
			h.AtMost[i]++
		}
	}
}

// sumWalks: each tree's duration_seconds as time.Duration holds it
// (truncated to the nanosecond), put in the first bucket whose bound it
// does not pass as Duration.Seconds() gives it (len(buckets): none), then
// counted and summed by tree and bucket.
func (s *Store) sumWalks(ctx context.Context, db sqlx.QueryerContext, span journalSpan, buckets []float64) ([]WalkTotal, error) {
	double := "DOUBLE PRECISION"
	if !s.Postgres {
		double = "REAL"
	}
	var src string
	if s.Postgres {
		in, _ := span.where("id")
		src = `(SELECT payload::jsonb -> 'trees' AS trees FROM events WHERE host = ? AND type = ? AND ` + in + ` OFFSET 0) e
			CROSS JOIN LATERAL jsonb_to_recordset(CASE WHEN jsonb_typeof(e.trees) = 'array' THEN e.trees ELSE '[]'::jsonb END)
				AS t(project TEXT, area TEXT, duration_seconds DOUBLE PRECISION)
			WHERE t.duration_seconds IS NOT NULL OFFSET 0`
		src = `SELECT COALESCE(t.project, '') AS project, COALESCE(t.area, '') AS area,
			CAST(trunc(t.duration_seconds * CAST(1000000000 AS DOUBLE PRECISION)) AS BIGINT) AS ns FROM ` + src
	} else {
		in, _ := span.where("e.id")
		src = `SELECT COALESCE(json_extract(t.value, '$.project'), '') AS project, COALESCE(json_extract(t.value, '$.area'), '') AS area,
			CAST(CAST(json_extract(t.value, '$.duration_seconds') AS REAL) * 1000000000.0 AS INTEGER) AS ns
			FROM events e, json_each(e.payload, '$.trees') AS t
			WHERE e.host = ? AND e.type = ? AND ` + in + ` AND json_extract(t.value, '$.duration_seconds') IS NOT NULL`
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
	_, spanArgs := span.where("id")
	args = slices.Concat(args, []any{s.Host, string(journal.TypeSnapshot)}, spanArgs)
	rows, err := db.QueryContext(ctx, s.SQL.Rebind(`SELECT project, area, bucket, COUNT(*), SUM(ns)
		FROM (SELECT project, area, ns, `+bucket.String()+` AS bucket FROM (`+src+`) x) w
		GROUP BY project, area, bucket ORDER BY project, area, bucket`), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []WalkTotal
	for rows.Next() {
		var project, area string
		var b int
		var count uint64
		var sum int64
		if err := rows.Scan(&project, &area, &b, &count, &sum); err != nil {
			return nil, err
		}
		if n := len(out); n == 0 || out[n-1].Project != project || out[n-1].Area != area {
			out = append(out, WalkTotal{Project: project, Area: area, Histogram: Histogram{AtMost: make([]uint64, len(buckets))}})
		}
		w := &out[len(out)-1]
		w.Count += count
		w.Sum += time.Duration(sum)
		for i := b; i < len(buckets); i++ { // cumulative
			w.AtMost[i] += count
		}
	}
	return out, rows.Err()
}
