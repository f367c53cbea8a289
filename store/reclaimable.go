package store

import (
	"context"
	"time"
)

// Reclaimable is what the sweep policies would free in one tree now, as
// the last plan of it found (less what the sweep that made it freed).
type Reclaimable struct {
	TreeKey
	Bytes     uint64
	Entries   uint64
	PlannedAt time.Time
}

// SetReclaimable records what plans of trees found reclaimable, replacing
// what earlier plans of the same trees found.
func (s *Store) SetReclaimable(ctx context.Context, rs []Reclaimable) error {
	if len(rs) == 0 {
		return nil
	}
	return s.InTx(ctx, func(tx *Tx) error {
		for _, r := range rs {
			if _, err := tx.exec(ctx, `INSERT INTO reclaimable (host, project, area, bytes, entries, planned_at) VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (host, project, area) DO UPDATE SET bytes = excluded.bytes, entries = excluded.entries, planned_at = excluded.planned_at`,
				tx.s.Host, r.Project, r.Area, int64(r.Bytes), int64(r.Entries), toMicros(r.PlannedAt)); err != nil {
				return err
			}
		}
		return nil
	})
}

// AllReclaimable reads what the last plans found reclaimable in every
// tree of this host that was ever planned.
func (s *Store) AllReclaimable(ctx context.Context) (map[TreeKey]Reclaimable, error) {
	var rows []struct {
		Project   string `db:"project"`
		Area      string `db:"area"`
		Bytes     int64  `db:"bytes"`
		Entries   int64  `db:"entries"`
		PlannedAt int64  `db:"planned_at"`
	}
	if err := s.sel(ctx, &rows, `SELECT project, area, bytes, entries, planned_at FROM reclaimable WHERE host = ?`, s.Host); err != nil {
		return nil, err
	}
	out := make(map[TreeKey]Reclaimable, len(rows))
	for _, r := range rows {
		k := TreeKey{Project: r.Project, Area: r.Area}
		out[k] = Reclaimable{TreeKey: k, Bytes: nonNegative(r.Bytes), Entries: nonNegative(r.Entries), PlannedAt: fromMicros(r.PlannedAt)}
	}
	return out, nil
}
