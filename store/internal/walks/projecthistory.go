package walks

import (
	"context"
	"time"

	"github.com/xfsq/xfsq/store/internal/base"
)

// ProjectSnapshotTotals reads the totals of every snapshot of each of a
// project's trees taken at or after since, ordered by area then time: the
// history a chart draws, in one statement however many snapshots the
// window holds (the snapshots_tree_at index's prefix serves it).
func (s *Store) ProjectSnapshotTotals(ctx context.Context, project string, since time.Time) ([]Snapshot, error) {
	var out []Snapshot
	err := s.Sel(ctx, &out, `SELECT `+snapshotCols+` FROM snapshots WHERE host = ? AND project = ? AND at >= ? ORDER BY area, at, id`,
		s.Host, project, base.ToMicros(since))
	for i := range out {
		out[i].fill()
	}
	return out, err
}
