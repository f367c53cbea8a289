package walks

import (
	"context"
	"time"

	"github.com/xfsq/xfsq/store/internal/base"
)

// Reclaimable is what the sweep policies would free in one tree now, as
// the last plan of it found (less what the sweep that made it freed).
type Reclaimable struct {
	base.TreeKey
	Bytes     uint64
	Entries   uint64
	PlannedAt time.Time
}

// SetReclaimable records what plans of trees found reclaimable, replacing
// what earlier plans of the same trees found: a statement per
// reclaimableChunk trees (a plan of every tree sent one a tree), the last
// of a tree named twice kept.
func (s *Store) SetReclaimable(ctx context.Context, rs []Reclaimable) error {
	last := make(map[base.TreeKey]int, len(rs))
	for i, r := range rs {
		last[base.TreeKey{Project: r.Project, Area: r.Area}] = i
	}
	uniq := make([]Reclaimable, 0, len(last))
	for i, r := range rs {
		if last[base.TreeKey{Project: r.Project, Area: r.Area}] == i { // one row a tree: ON CONFLICT updates a row once a statement
			uniq = append(uniq, r)
		}
	}
	if len(uniq) == 0 {
		return nil
	}
	return s.InTx(ctx, func(tx *Tx) error {
		for len(uniq) > 0 {
			chunk := uniq[:min(len(uniq), reclaimableChunk)]
			uniq = uniq[len(chunk):]
			args := make([]any, 0, 6*len(chunk))
			for _, r := range chunk {
				args = append(args, tx.s.Host, r.Project, r.Area, int64(r.Bytes), int64(r.Entries), base.ToMicros(r.PlannedAt))
			}
			if _, err := tx.Exec(ctx, `INSERT INTO reclaimable (host, project, area, bytes, entries, planned_at) VALUES `+
				base.Placeholders(len(chunk), "(?, ?, ?, ?, ?, ?)")+`
				ON CONFLICT (host, project, area) DO UPDATE SET bytes = excluded.bytes, entries = excluded.entries, planned_at = excluded.planned_at`,
				args...); err != nil {
				return err
			}
		}
		return nil
	})
}

// reclaimableChunk bounds the rows of one statement of SetReclaimable:
// six parameters a row, well under both drivers' limits.
const reclaimableChunk = 2000

// AllReclaimable reads what the last plans found reclaimable in every
// tree of this host that was ever planned.
func (s *Store) AllReclaimable(ctx context.Context) (map[base.TreeKey]Reclaimable, error) {
	var rows []struct {
		Project   string `db:"project"`
		Area      string `db:"area"`
		Bytes     int64  `db:"bytes"`
		Entries   int64  `db:"entries"`
		PlannedAt int64  `db:"planned_at"`
	}
	if err := s.Sel(ctx, &rows, `SELECT project, area, bytes, entries, planned_at FROM reclaimable WHERE host = ?`, s.Host); err != nil {
		return nil, err
	}
	out := make(map[base.TreeKey]Reclaimable, len(rows))
	for _, r := range rows {
		k := base.TreeKey{Project: r.Project, Area: r.Area}
		out[k] = Reclaimable{TreeKey: k, Bytes: base.NonNegative(r.Bytes), Entries: base.NonNegative(r.Entries), PlannedAt: base.FromMicros(r.PlannedAt)}
	}
	return out, nil
}
