package walks

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/xfsq/xfsq/store/internal/base"
)

// Reads of every tree of this host at once. A report, an overview or a
// pass over 1,000 projects asked a few statements per tree (~12,000 for a
// report): on a PostgreSQL shared by a fleet each is a round trip, and
// the read took seconds. Each read here is one statement however many
// trees the host has.

// SnapshotSummary is what a report shows of one tree's snapshots: the
// newest (complete or partial), the newest complete one, and the growth
// of allocated bytes over each window asked, between complete walks.
type SnapshotSummary struct {
	Latest       Snapshot
	Complete     Snapshot // valid when HaveComplete
	HaveComplete bool
	// Growth is, per window asked, Complete's bytes minus those of the
	// newest complete snapshot taken at or before Complete.At − window;
	// nil until one that old exists.
	Growth []*int64
}

// SnapshotSummaries reads the summary of every tree of project (""
// every project of this host) that has a snapshot, in one statement: each
// part is an indexed lookup per tree (snapshots_tree_at) inside the
// database, not a round trip.
func (s *Store) SnapshotSummaries(ctx context.Context, project string, windows ...time.Duration) (map[base.TreeKey]SnapshotSummary, error) {
	return base.BoundedRead(ctx, s.DB, func(ctx context.Context) (out map[base.TreeKey]SnapshotSummary, err error) {
		if project != "" {
			return s.snapshotSummaries(ctx, s.SQL, project, windows...)
		}
		// A host's every tree: four lookups a tree, costed above
		// jit_above_cost from ~2,000 trees; compiling them took longer
		// than running them (withoutJIT).
		err = s.WithoutJIT(ctx, func(db sqlx.QueryerContext) error {
			out, err = s.snapshotSummaries(ctx, db, project, windows...)
			return err
		})
		return out, err
	})
}

func (s *Store) snapshotSummaries(ctx context.Context, db sqlx.QueryerContext, project string, windows ...time.Duration) (map[base.TreeKey]SnapshotSummary, error) {
	var q strings.Builder
	q.WriteString(`SELECT t.project, t.area, l.at, l.size_bytes, l.apparent_bytes, l.files, l.dirs, l.mtime, l.partial, l.errors, l.kernel_bytes,
		c.at, c.size_bytes, c.mtime`)
	for i := range windows {
		q.WriteString(", w" + strconv.Itoa(i) + ".size_bytes")
	}
	args := make([]any, 0, len(windows)+1)
	if s.Postgres {
		// Each lookup once a tree (LATERAL): joined on the IDs of
		// scalar subqueries, PostgreSQL hashed every host's snapshots for
		// each and ran the lookups twice (~2x the time on one host, more
		// beside others'). The newest complete one is the newest when that
		// is complete: looked up only beside a partial one.
		newest := func(cols, and string) string {
			return `(SELECT ` + cols + ` FROM snapshots x WHERE x.host = t.host AND x.project = t.project AND x.area = t.area` + and +
				` ORDER BY x.at DESC, x.id DESC LIMIT 1)`
		}
		const cols = "x.id, x.at, x.size_bytes, x.apparent_bytes, x.files, x.dirs, x.mtime, x.partial, x.errors, x.kernel_bytes"
		q.WriteString(` FROM trees t
		JOIN LATERAL ` + newest(cols, "") + ` l ON true
		LEFT JOIN LATERAL (SELECT l.at, l.size_bytes, l.mtime WHERE NOT l.partial
			UNION ALL (SELECT x.at, x.size_bytes, x.mtime FROM snapshots x WHERE l.partial AND x.host = t.host AND x.project = t.project
				AND x.area = t.area AND NOT x.partial ORDER BY x.at DESC, x.id DESC LIMIT 1)) c ON true`)
		for i, w := range windows {
			a := "w" + strconv.Itoa(i)
			q.WriteString(" LEFT JOIN LATERAL " + newest("x.size_bytes", " AND NOT x.partial AND x.at <= c.at - ?") + " " + a + " ON true")
			args = append(args, w.Microseconds())
		}
	} else {
		newest := func(and string) string {
			return `(SELECT x.id FROM snapshots x WHERE x.host = t.host AND x.project = t.project AND x.area = t.area` + and +
				` ORDER BY x.at DESC, x.id DESC LIMIT 1)`
		}
		q.WriteString(` FROM trees t
		JOIN snapshots l ON l.id = ` + newest("") + `
		LEFT JOIN snapshots c ON c.id = ` + newest(" AND NOT x.partial"))
		for i, w := range windows {
			a := "w" + strconv.Itoa(i)
			q.WriteString(" LEFT JOIN snapshots " + a + " ON " + a + ".id = " + newest(" AND NOT x.partial AND x.at <= c.at - ?"))
			args = append(args, w.Microseconds())
		}
	}
	q.WriteString(` WHERE t.host = ?`)
	args = append(args, s.Host)
	if project != "" {
		q.WriteString(` AND t.project = ?`)
		args = append(args, project)
	}
	rows, err := db.QueryContext(ctx, s.SQL.Rebind(q.String()), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[base.TreeKey]SnapshotSummary{}
	// One set of destinations for every row (a report scans 3,000), the
	// row copied out of it.
	var l Snapshot
	var cAt, cSize, cMtime sql.NullInt64
	before := make([]sql.NullInt64, len(windows))
	dest := []any{&l.Project, &l.Area, &l.AtMicros, &l.SizeBytes, &l.ApparentBytes, &l.Files, &l.Dirs, &l.MtimeMicros,
		&l.Partial, &l.Errors, &l.KernelBytes, &cAt, &cSize, &cMtime}
	for i := range before {
		dest = append(dest, &before[i])
	}
	for rows.Next() {
		l = Snapshot{}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		l.fill()
		sum := SnapshotSummary{Latest: l, Growth: make([]*int64, len(windows))}
		if cAt.Valid {
			sum.HaveComplete = true
			sum.Complete = Snapshot{Project: l.Project, Area: l.Area, AtMicros: cAt.Int64, SizeBytes: uint64(cSize.Int64), MtimeMicros: cMtime.Int64}
			sum.Complete.fill()
			for i, b := range before {
				if b.Valid {
					d := cSize.Int64 - b.Int64
					sum.Growth[i] = &d
				}
			}
		}
		out[base.TreeKey{Project: l.Project, Area: l.Area}] = sum
	}
	return out, rows.Err()
}

// storedTreesChunk bounds the names one statement of LatestTrees lists:
// well under both drivers' limits on bound parameters.
const storedTreesChunk = 2000

// LatestTrees reads the full trees kept of the newest snapshots of the
// area of each of projects (LatestTree's, for many at once): one
// statement per 2,000 names. A project without one is absent.
func (s *Store) LatestTrees(ctx context.Context, area string, projects []string) (map[string]StoredTree, error) {
	return base.BoundedRead(ctx, s.DB, func(ctx context.Context) (map[string]StoredTree, error) { return s.latestTrees(ctx, area, projects) })
}

func (s *Store) latestTrees(ctx context.Context, area string, projects []string) (map[string]StoredTree, error) {
	out := make(map[string]StoredTree, len(projects))
	for len(projects) > 0 {
		chunk := projects[:min(len(projects), storedTreesChunk)]
		projects = projects[len(chunk):]
		args := []any{s.Host, area}
		for _, p := range chunk {
			args = append(args, p)
		}
		rows, err := s.SQL.QueryContext(ctx, s.SQL.Rebind(`SELECT project, at, tree FROM snapshot_trees WHERE host = ? AND area = ? AND project IN (?`+
			strings.Repeat(", ?", len(chunk)-1)+`)`), args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var name string
			var at int64
			var tree []byte
			if err := rows.Scan(&name, &at, &tree); err != nil {
				rows.Close()
				return nil, err
			}
			out[name] = StoredTree{At: base.FromMicros(at), Tree: tree}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// StoredTreeTimes is, for each project of this host whose area has a full
// tree kept, when that tree's snapshot was taken: what tells a reader
// which of the trees it parsed before are still the newest, without
// reading them.
func (s *Store) StoredTreeTimes(ctx context.Context, area string) (map[string]time.Time, error) {
	return base.BoundedRead(ctx, s.DB, func(ctx context.Context) (map[string]time.Time, error) { return s.storedTreeTimes(ctx, area) })
}

func (s *Store) storedTreeTimes(ctx context.Context, area string) (map[string]time.Time, error) {
	rows, err := s.SQL.QueryContext(ctx, s.SQL.Rebind(`SELECT project, at FROM snapshot_trees WHERE host = ? AND area = ?`), s.Host, area)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var name string
		var at int64
		if err := rows.Scan(&name, &at); err != nil {
			return nil, err
		}
		out[name] = base.FromMicros(at)
	}
	return out, rows.Err()
}
