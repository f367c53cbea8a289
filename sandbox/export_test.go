package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/sandbox/internal/retention"
	"github.com/xfsq/xfsq/sandbox/internal/snapshots"
	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/sweep"
)

// Hooks for the external tests (package sandbox_test), unset when t ends:
// the core's own (sandbox/internal/core/testhooks.go), handed on.

// OnSnapshotTree calls f as each tree's walk starts, on the walking thread.
func OnSnapshotTree(t testing.TB, f func(ctx context.Context, tree store.Tree)) {
	snapshots.OnSnapshotTree(t, f)
}

// OnEvictionSettled calls f after each deletion's settled record.
func OnEvictionSettled(t testing.TB, f func(project string, r deletion.Record)) {
	retention.OnEvictionSettled(t, f)
}

// WalkBatches makes a snapshot pass store its walks in batches of at most
// n trees, each beginning walks for window at most, until t ends.
func WalkBatches(t testing.TB, n int, window time.Duration) { core.WalkBatches(t, n, window) }

// ForgetReads empties m's read cache, for benchmarks of the uncached path.
func ForgetReads(m *Manager) { core.ForgetReads(m.c) }

// Reread is how many projects m has read from the store rather than from
// its read cache, by Show and Usage, since it opened.
func Reread(m *Manager) int64 { return core.Reread(m.c) }

// SavePlan keeps plan, a dry run's of areas (none: all), as a dry run with
// Keep does, and returns its file.
func (m *Manager) SavePlan(ctx context.Context, plan sweep.Plan, areas []string) ([]byte, error) {
	return m.sweeps.SavePlan(ctx, plan, areas)
}

// SetOverviewWalkHook makes tests act as a refresh starts its walk.
func (m *Manager) SetOverviewWalkHook(fn func()) { m.reads.SetOverviewWalkHook(fn) }

// OverviewRefreshWaiters is how many callers wait for the refresh in progress.
func (m *Manager) OverviewRefreshWaiters() int { return m.reads.OverviewRefreshWaiters() }
