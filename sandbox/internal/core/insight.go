package core

import (
	"context"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/sandbox/internal/core/trend"
	"github.com/xfsq/xfsq/sandbox/internal/core/usage"
	"github.com/xfsq/xfsq/store"
)

// What an operator asks first, beside usage and limits: when a tree will
// be full at its trend (package trend's rule), what the sweep policies would
// free in it now, and how much the root's limits promise of its disk. The
// figures' reads fill what Report carries (sandbox/internal/core/usage,
// insight.go); the read model (readmodel/insight.go) answers the rest from
// these pieces.

// TrendOf fits a tree's complete snapshots and its usage now.
func TrendOf(r *TreeStatus, snaps []store.Snapshot, now time.Time) trend.Trend {
	return usage.TrendOf(r, snaps, now)
}

// insight fills the rows' full-in estimate and reclaimable bytes.
func (m *Manager) insight(ctx context.Context, rows []TreeStatus) error {
	return m.figs.Insight(ctx, rows)
}

// diskTrend fits the disk's use at each scheduled pass over trend.Window
// and now, against its size (usage.Reads.DiskTrend).
func (m *Manager) diskTrend(ctx context.Context, total, free uint64, now time.Time) (trend.Trend, error) {
	return m.figs.DiskTrend(ctx, total, free, now)
}

// DiskSize is the size and available bytes of the root's filesystem.
func (m *Manager) DiskSize() (total, free uint64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(m.Root, &st); err != nil {
		return 0, 0, false
	}
	return st.Blocks * uint64(st.Bsize), st.Bavail * uint64(st.Bsize), true
}

// TreeKey names one tree: a project (or RootOwner) and an area.
type TreeKey = store.TreeKey
