package store

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/xfsq/xfsq/quota"
)

// TreeUsage is one tree with its usage as admission counts it on the
// fallback: the last walk plus the ledger and reservations since.
type TreeUsage struct {
	Tree
	Used     quota.Usage
	WalkedAt time.Time // zero: never walked
}

// TreeUsages reads every tree of this host with its usage in one statement
// (a consistent snapshot on both drivers) and outside any write
// transaction: it never takes SQLite's write lock, which admission holds,
// so a reader of the whole root (a metrics scrape) neither waits on writers
// nor makes them wait, however many trees there are.
func (s *Store) TreeUsages(ctx context.Context) ([]TreeUsage, error) {
	var rows []struct {
		treeRow
		WalkedBytes  int64 `db:"walked_bytes"`
		WalkedInodes int64 `db:"walked_inodes"`
		WalkedAt     int64 `db:"walked_at"`
		LedgerBytes  int64 `db:"ledger_bytes"`
		LedgerInodes int64 `db:"ledger_inodes"`
		ResBytes     int64 `db:"res_bytes"`
		ResInodes    int64 `db:"res_inodes"`
	}
	cols := "t." + strings.ReplaceAll(treeCols, ", ", ", t.")
	err := s.sel(ctx, &rows, `SELECT `+cols+`, t.walked_bytes, t.walked_inodes, t.walked_at,
		COALESCE(l.bytes, 0) AS ledger_bytes, COALESCE(l.inodes, 0) AS ledger_inodes,
		COALESCE(r.bytes, 0) AS res_bytes, COALESCE(r.inodes, 0) AS res_inodes
		FROM trees t
		LEFT JOIN (SELECT project, area, SUM(bytes) AS bytes, SUM(inodes) AS inodes FROM ledger WHERE host = ? GROUP BY project, area) l
			ON l.project = t.project AND l.area = t.area
		LEFT JOIN (SELECT project, area, SUM(bytes) AS bytes, SUM(inodes) AS inodes FROM reservations WHERE host = ? GROUP BY project, area) r
			ON r.project = t.project AND r.area = t.area
		WHERE t.host = ? ORDER BY t.project, t.area`, s.Host, s.Host, s.Host)
	if err != nil {
		return nil, err
	}
	out := make([]TreeUsage, len(rows))
	for i, r := range rows {
		out[i] = TreeUsage{Tree: r.tree(), WalkedAt: fromMicros(r.WalkedAt),
			Used: quota.Usage{Bytes: nonNegative(r.WalkedBytes + r.LedgerBytes + r.ResBytes),
				Inodes: nonNegative(r.WalkedInodes + r.LedgerInodes + r.ResInodes)}}
	}
	return out, nil
}

// EventsAfter lists this host's events of the given types with an ID above
// afterID, oldest first, at most limit (0 means 1000): for a reader that
// follows the journal. The range on the primary key keeps each call as
// cheap as what it returns, however long the journal.
func (s *Store) EventsAfter(ctx context.Context, afterID int64, types []string, limit int) ([]Event, error) {
	if limit <= 0 {
		limit = 1000
	}
	q := `SELECT id, at, type, host, project, actor, payload FROM events WHERE id > ? AND host = ?`
	args := []any{afterID, s.Host}
	if len(types) > 0 {
		q += ` AND type IN (?` + strings.Repeat(", ?", len(types)-1) + `)`
		for _, t := range types {
			args = append(args, t)
		}
	}
	q += ` ORDER BY id LIMIT ?`
	args = append(args, limit)
	var rows []eventRow
	if err := s.sel(ctx, &rows, q, args...); err != nil {
		return nil, err
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = Event{ID: r.ID, At: fromMicros(r.At), Type: r.Type, Host: r.Host, Project: r.Project, Actor: r.Actor, Payload: json.RawMessage(r.Payload)}
	}
	return out, nil
}
