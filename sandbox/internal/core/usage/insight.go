package usage

import (
	"context"
	"time"

	"github.com/xfsq/xfsq/sandbox/internal/core/trend"
	"github.com/xfsq/xfsq/store"
)

// What Report carries of the snapshots and the sweep's plans: each tree's
// full-in estimate at its trend (package trend's rule) and what the sweep
// policies would free in it now; and the disk's own trend, which the read
// model's overview asks for.

// Insight fills the rows' full-in estimate and reclaimable bytes.
func (m *Reads) Insight(ctx context.Context, rows []TreeStatus) error {
	reclaim, err := m.Store.AllReclaimable(ctx)
	if err != nil {
		return err
	}
	now := m.src.Now()
	if len(rows) == 0 {
		return nil
	}
	history, err := m.Store.AllSnapshotTotals(ctx, now.Add(-trend.Window))
	if err != nil {
		return err
	}
	for i := range rows {
		r := &rows[i]
		k := store.TreeKey{Project: r.Project, Area: r.Area}
		if rc, ok := reclaim[k]; ok {
			r.ReclaimableBytes = &rc.Bytes
		}
		t := TrendOf(r, history[k], now)
		if t.FullIn != nil {
			secs := t.FullIn.Seconds()
			r.FullInSeconds = &secs
		}
	}
	return nil
}

// TrendOf fits a tree's complete snapshots and its usage now.
func TrendOf(r *TreeStatus, snaps []store.Snapshot, now time.Time) trend.Trend {
	points := make([]trend.Point, 0, len(snaps)+1)
	for _, s := range snaps {
		if !s.Partial {
			points = append(points, trend.Point{At: s.At, Bytes: s.SizeBytes})
		}
	}
	at := now
	if r.UsageWalkedAt != nil {
		at = *r.UsageWalkedAt // the fallback's figure is its walk's, plus xfsq's writes since
	}
	points = append(points, trend.Point{At: at, Bytes: r.UsedBytes})
	return trend.FullIn(points, r.BytesHard, now)
}

// DiskTrend fits the disk's use at each scheduled pass over trend.Window
// (storage.snapshot records what was free) and now, against its size.
func (m *Reads) DiskTrend(ctx context.Context, total, free uint64, now time.Time) (trend.Trend, error) {
	passes, err := m.Store.PassFree(ctx, now.Add(-trend.Window))
	if err != nil {
		return trend.Trend{}, err
	}
	points := make([]trend.Point, 0, len(passes)+1)
	for _, p := range passes {
		if p.FreeBytes <= total {
			points = append(points, trend.Point{At: p.At, Bytes: total - p.FreeBytes})
		}
	}
	points = append(points, trend.Point{At: now, Bytes: total - min(free, total)})
	return trend.FullIn(points, total, now), nil
}
