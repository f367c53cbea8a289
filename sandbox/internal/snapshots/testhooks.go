package snapshots

import (
	"context"

	"github.com/xfsq/xfsq/store"
)

// Hooks for the tests of package sandbox (its export_test.go hands them
// on), unset when t ends. t is a testing.TB; only its Cleanup is needed,
// so that this package does not import testing.
type cleaner interface{ Cleanup(func()) }

// OnSnapshotTree calls f as each tree's walk starts, on the walking thread.
func OnSnapshotTree(t cleaner, f func(ctx context.Context, tree store.Tree)) {
	snapshotTreeStarts = f
	t.Cleanup(func() { snapshotTreeStarts = nil })
}
