package retention

import (
	"context"

	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/sweep"
)

// Hooks for the tests of package sandbox (its export_test.go hands them
// on), unset when t ends. t is a testing.TB; only its Cleanup is needed,
// so that this package does not import testing.
type cleaner interface{ Cleanup(func()) }

// OnEvictionSettled calls f after each deletion's settled record.
func OnEvictionSettled(t cleaner, f func(project string, r deletion.Record)) {
	evictionSettled = f
	t.Cleanup(func() { evictionSettled = nil })
}

// SavePlan keeps plan, a dry run's of areas (none: all), as a dry run with
// Keep does, and returns its file.
func (m *Sweeper) SavePlan(ctx context.Context, plan sweep.Plan, areas []string) ([]byte, error) {
	data, _, err := m.savePlan(ctx, plan, areas, nil)
	return data, err
}
