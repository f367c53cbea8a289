package core

import (
	"context"
	"time"

	"golang.org/x/sys/unix"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/sandbox/internal/core/trend"
	"github.com/xfsq/xfsq/store"
)

// What an operator asks first, beside usage and limits: when a tree will
// be full at its trend (package trend's rule), what the sweep policies would
// free in it now, and how much the root's limits promise of its disk. The
// core fills what Report carries; the read model (readmodel/insight.go)
// answers the rest from these pieces.

// insight fills the rows' full-in estimate and reclaimable bytes.
func (m *Manager) insight(ctx context.Context, rows []TreeStatus) error {
	reclaim, err := m.Store.AllReclaimable(ctx)
	if err != nil {
		return err
	}
	now := m.now()
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
	if r.UsageAsOf != nil {
		at = *r.UsageAsOf // the fallback's figure is its walk's, plus xfsq's writes since
	}
	points = append(points, trend.Point{At: at, Bytes: r.UsedBytes})
	return trend.FullIn(points, r.BytesHard, now)
}

// diskTrend fits the disk's use at each scheduled pass over trend.Window
// (storage.snapshot records what was free) and now, against its size.
func (m *Manager) diskTrend(ctx context.Context, total, free uint64, now time.Time) (trend.Trend, error) {
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

// DiskSize is the size and available bytes of the root's filesystem.
func (m *Manager) DiskSize() (total, free uint64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(m.Root, &st); err != nil {
		return 0, 0, false
	}
	return st.Blocks * uint64(st.Bsize), st.Bavail * uint64(st.Bsize), true
}

// Promised is how much the root's hard byte limits promise of its disk:
// the wire's (api/v1), which the overview and the report answer.
type Promised = apiv1.Promised

func promised(rows []TreeStatus, disk uint64) Promised {
	var p Promised
	for _, r := range rows {
		if r.BytesHard == 0 {
			p.UnlimitedTrees++
			continue
		}
		p.PromisedBytes += r.BytesHard
	}
	if disk > 0 {
		p.OvercommitRatio = float64(p.PromisedBytes) / float64(disk)
	}
	return p
}

// TreeKey names one tree: a project (or RootOwner) and an area.
type TreeKey = store.TreeKey
