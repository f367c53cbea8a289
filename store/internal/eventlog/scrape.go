package eventlog

import (
	"context"
	"strings"
	"time"

	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store/internal/base"
	"github.com/xfsq/xfsq/store/internal/registry"
)

// TreeUsage is one tree with its usage as admission counts it on the
// fallback: the last walk plus the ledger and reservations since.
type TreeUsage struct {
	registry.Tree
	Used     quota.Usage
	WalkedAt time.Time // zero: never walked
	// BytesSoftSince and InodesSoftSince are the grace timers, as in
	// TreeRead.
	BytesSoftSince, InodesSoftSince time.Time
}

// TreeUsages reads every tree of this host with its usage in one statement
// (a consistent snapshot on both drivers) and outside any write
// transaction: it never takes SQLite's write lock, which admission holds,
// so a reader of the whole root (a metrics scrape) neither waits on writers
// nor makes them wait, however many trees there are.
func (s *Store) TreeUsages(ctx context.Context) ([]TreeUsage, error) {
	// Scanned by hand: on 2,000 trees sqlx's reflection was a third of
	// the read.
	return base.BoundedRead(ctx, s.DB, s.treeUsages)
}

func (s *Store) treeUsages(ctx context.Context) ([]TreeUsage, error) {
	rows, err := s.SQL.QueryContext(ctx, s.SQL.Rebind(`SELECT t.project, t.area, t.path, t.backend, t.fs_uuid, t.project_id,
		t.bytes_soft, t.bytes_hard, t.inodes_soft, t.inodes_hard, t.created_dir, t.walked_at, t.bytes_soft_since, t.inodes_soft_since,
		t.walked_bytes + t.ledger_bytes + COALESCE(r.bytes, 0),
		t.walked_inodes + t.ledger_inodes + COALESCE(r.inodes, 0)
		FROM trees t
		LEFT JOIN (SELECT project, area, SUM(bytes) AS bytes, SUM(inodes) AS inodes FROM reservations WHERE host = ? GROUP BY project, area) r
			ON r.project = t.project AND r.area = t.area
		WHERE t.host = ? ORDER BY t.project, t.area`), s.Host, s.Host)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []TreeUsage
	for rows.Next() {
		var r registry.TreeRow
		var walkedAt, bytesSince, inodesSince, bytes, inodes int64
		if err := rows.Scan(&r.Project, &r.Area, &r.Path, &r.Backend, &r.FSUUID, &r.ProjectID,
			&r.BytesSoft, &r.BytesHard, &r.InodesSoft, &r.InodesHard, &r.CreatedDir, &walkedAt, &bytesSince, &inodesSince, &bytes, &inodes); err != nil {
			return nil, err
		}
		out = append(out, TreeUsage{Tree: r.ToTree(), WalkedAt: base.FromMicros(walkedAt),
			Used:           quota.Usage{Bytes: base.NonNegative(bytes), Inodes: base.NonNegative(inodes)},
			BytesSoftSince: base.FromMicros(bytesSince), InodesSoftSince: base.FromMicros(inodesSince)})
	}
	return out, rows.Err()
}

// EventsAfter lists this host's events of the given types with an ID above
// afterID, oldest first, at most limit (0 means 1000): for a reader that
// follows the journal. The range on the primary key keeps each call as
// cheap as what it returns, however long the journal.
func (s *Store) EventsAfter(ctx context.Context, afterID int64, types []journal.Type, limit int) ([]journal.Event, error) {
	if limit <= 0 {
		limit = 1000
	}
	q := `SELECT id, at, type, host, project, actor, payload FROM events WHERE id > ? AND host = ?`
	args := []any{afterID, s.Host}
	if len(types) > 0 {
		q += ` AND type IN (?` + strings.Repeat(", ?", len(types)-1) + `)`
		for _, t := range types {
			args = append(args, string(t))
		}
	}
	q += ` ORDER BY id LIMIT ?`
	args = append(args, limit)
	var rows []EventRow
	ctx, done, err := s.Bounded(ctx)
	if err != nil {
		return nil, err
	}
	st, err := s.Prepared(ctx, q)
	if err != nil {
		return nil, done(err)
	}
	if err := done(st.SelectContext(ctx, &rows, args...)); err != nil {
		return nil, err
	}
	return EventsOf(rows), nil
}
