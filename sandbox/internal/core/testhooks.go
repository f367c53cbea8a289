package core

import (
	"context"
	"time"

	"github.com/xfsq/xfsq/sandbox/internal/core/treewalk"
	"github.com/xfsq/xfsq/store"
)

// Hooks for the tests of package sandbox (its export_test.go hands them
// on), unset when t ends. t is a testing.TB; only its Cleanup is needed,
// so that this package does not import testing.
type cleaner interface{ Cleanup(func()) }

// WalkBatches makes a snapshot pass store its walks in batches of at most
// n trees, each beginning walks for window at most, until t ends.
func WalkBatches(t cleaner, n int, window time.Duration) {
	wasN, wasW := treewalk.BatchMax, treewalk.BatchWindow
	treewalk.BatchMax, treewalk.BatchWindow = n, window
	t.Cleanup(func() { treewalk.BatchMax, treewalk.BatchWindow = wasN, wasW })
}

// ForgetReads empties m's read cache, for benchmarks of the uncached path.
func ForgetReads(m *Manager) { m.figs.Forget() }

// Reread is how many projects m has read from the store rather than from
// its read cache, by Show and Usage, since it opened.
func Reread(m *Manager) int64 { return m.figs.Rereads() }

// CannotClone makes every walk find that the root's mount cannot be
// copied without its submounts (no CAP_SYS_ADMIN), until t ends.
func CannotClone(t cleaner) {
	treewalk.CannotClone(t)
}

// Rebaseline walks the fallback tree t now and records the walk as its
// baseline, as a read that refreshes does, for the tests of the walks
// beneath a tenant's mounts (sandbox/internal/snapshots).
func Rebaseline(ctx context.Context, m *Manager, t store.Tree) error {
	_, err := m.baseline(ctx, t, 0)
	return err
}
