package walks

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"time"

	"github.com/xfsq/xfsq/store/internal/base"
)

// HistoryEvery is how often at most a tree's snapshot is kept whole for
// later comparison (Diff): the tree of every snapshot would cost the store
// one full tree per tree per hour. A tree unchanged since the last one
// kept is not kept again.
var HistoryEvery = 3 * time.Hour

// HistoryRetention is how long the trees kept for comparison are kept: a
// week back, and a day's margin.
const HistoryRetention = 8 * 24 * time.Hour

// keepHistory keeps the tree of a complete snapshot when the newest one
// kept of the same tree is HistoryEvery older and differs, and drops
// those older than HistoryRetention, but the newest of them: it is the
// tree as it was at the retention's start, and a tree unchanged since
// has no later one.
func (t *Tx) keepHistory(ctx context.Context, s Snapshot, tree []byte) error {
	if s.Partial || len(tree) == 0 {
		return nil // it saw part of the tree (or kept none): nothing to compare with
	}
	sum := sha256.Sum256(tree)
	digest := hex.EncodeToString(sum[:])
	var last struct {
		At     int64  `db:"at"`
		Digest string `db:"digest"`
	}
	err := t.Get(ctx, &last, `SELECT at, digest FROM snapshot_history WHERE host = ? AND project = ? AND area = ? ORDER BY at DESC LIMIT 1`,
		t.s.Host, s.Project, s.Area)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return err
	case last.Digest == digest || base.ToMicros(s.At)-last.At < HistoryEvery.Microseconds():
		return nil
	}
	if _, err := t.Exec(ctx, `INSERT INTO snapshot_history (host, project, area, at, digest, tree) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (host, project, area, at) DO NOTHING`, t.s.Host, s.Project, s.Area, base.ToMicros(s.At), digest, tree); err != nil {
		return err
	}
	cutoff := base.ToMicros(s.At.Add(-HistoryRetention))
	_, err = t.Exec(ctx, `DELETE FROM snapshot_history WHERE host = ? AND project = ? AND area = ? AND at < (
		SELECT MAX(at) FROM snapshot_history WHERE host = ? AND project = ? AND area = ? AND at <= ?)`,
		t.s.Host, s.Project, s.Area, t.s.Host, s.Project, s.Area, cutoff)
	return err
}

// StoredTree is a tree kept of a snapshot, in inventory's stored form.
type StoredTree struct {
	At   time.Time
	Tree []byte
}

// TreeAt reads the tree kept of k's snapshots as it was at at: the newest
// kept at or before it. ok is false when none is that old.
func (s *Store) TreeAt(ctx context.Context, k base.TreeKey, at time.Time) (StoredTree, bool, error) {
	var row struct {
		At   int64  `db:"at"`
		Tree []byte `db:"tree"`
	}
	err := s.Get(ctx, &row, `SELECT at, tree FROM snapshot_history WHERE host = ? AND project = ? AND area = ? AND at <= ? ORDER BY at DESC LIMIT 1`,
		s.Host, k.Project, k.Area, base.ToMicros(at))
	if errors.Is(err, sql.ErrNoRows) {
		return StoredTree{}, false, nil
	}
	if err != nil {
		return StoredTree{}, false, err
	}
	return StoredTree{At: base.FromMicros(row.At), Tree: row.Tree}, true, nil
}

// OldestTree is when the oldest tree kept of k's snapshots was taken
// (zero: none): what a comparison too far back is told it may go to.
func (s *Store) OldestTree(ctx context.Context, k base.TreeKey) (time.Time, error) {
	var at sql.NullInt64
	err := s.Get(ctx, &at, `SELECT MIN(at) FROM snapshot_history WHERE host = ? AND project = ? AND area = ?`, s.Host, k.Project, k.Area)
	if err != nil || !at.Valid {
		return time.Time{}, err
	}
	return base.FromMicros(at.Int64), nil
}

// SnapshotTotals reads the totals of k's snapshots taken at or after
// since, oldest first: the history a trend is fitted to.
func (s *Store) SnapshotTotals(ctx context.Context, k base.TreeKey, since time.Time) ([]Snapshot, error) {
	var out []Snapshot
	err := s.Sel(ctx, &out, `SELECT `+snapshotCols+` FROM snapshots WHERE host = ? AND project = ? AND area = ? AND at >= ? ORDER BY at, id`,
		s.Host, k.Project, k.Area, base.ToMicros(since))
	for i := range out {
		out[i].fill()
	}
	return out, err
}

// PassFree reads what each scheduled snapshot pass since then found free
// on the root's filesystem, oldest first: a row a pass (pass_free), not
// the pass's record, which lists every tree.
func (s *Store) PassFree(ctx context.Context, since time.Time) ([]PassFree, error) {
	var rows []struct {
		At   int64 `db:"at"`
		Free int64 `db:"free_bytes"`
	}
	if err := s.Sel(ctx, &rows, `SELECT at, free_bytes FROM pass_free WHERE host = ? AND at >= ? ORDER BY at`, s.Host, base.ToMicros(since)); err != nil {
		return nil, err
	}
	out := make([]PassFree, 0, len(rows))
	for _, r := range rows {
		if r.Free > 0 {
			out = append(out, PassFree{At: base.FromMicros(r.At), FreeBytes: uint64(r.Free)})
		}
	}
	return out, nil
}

// PassFree is what one scheduled pass found free.
type PassFree struct {
	At        time.Time
	FreeBytes uint64
}

// AllSnapshotTotals is SnapshotTotals for every tree of the host at once,
// by tree: one statement however many trees a report or an overview fits.
func (s *Store) AllSnapshotTotals(ctx context.Context, since time.Time) (map[base.TreeKey][]Snapshot, error) {
	// Scanned by hand, each tree's names kept once and its snapshots a
	// part of one slice: a report of 3,000 trees spent more on sqlx's
	// reflection and a slice per tree than on the rows.
	rows, err := s.SQL.QueryContext(ctx, s.SQL.Rebind(`SELECT `+snapshotCols+` FROM snapshots WHERE host = ? AND at >= ? ORDER BY project, area, at, id`),
		s.Host, base.ToMicros(since))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var all []Snapshot
	var project, area sql.RawBytes
	for rows.Next() {
		var sn Snapshot
		if err := rows.Scan(&project, &area, &sn.AtMicros, &sn.SizeBytes, &sn.ApparentBytes, &sn.Files, &sn.Dirs, &sn.MtimeMicros,
			&sn.Partial, &sn.Errors, &sn.KernelBytes); err != nil {
			return nil, err
		}
		if n := len(all); n > 0 && all[n-1].Project == string(project) && all[n-1].Area == string(area) {
			sn.Project, sn.Area = all[n-1].Project, all[n-1].Area
		} else {
			sn.Project, sn.Area = string(project), string(area)
		}
		sn.fill()
		all = append(all, sn)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := map[base.TreeKey][]Snapshot{}
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j].Project == all[i].Project && all[j].Area == all[i].Area {
			j++
		}
		out[base.TreeKey{Project: all[i].Project, Area: all[i].Area}] = all[i:j:j] // an append copies
		i = j
	}
	return out, nil
}
