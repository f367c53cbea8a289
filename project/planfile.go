package project

import (
	"context"
	"fmt"
	"os"

	"github.com/xfsq/xfsq/internal/atomicfile"
	"github.com/xfsq/xfsq/sweep"
)

// ReadPlanFile loads a plan SavePlan wrote, for SweepOptions.Apply. A file
// that cannot be read is bad input: the caller named it.
func ReadPlanFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &InputError{Msg: err.Error()}
	}
	return data, nil
}

// WritePlanFile saves a dry run's plan of areas (none: all) to path for
// review, atomically: a reviewer never sees half a plan, and the store
// records its hash, so that only this file, unedited, applies.
func (m *Manager) WritePlanFile(ctx context.Context, plan sweep.Plan, areas []string, path string) error {
	data, err := m.SavePlan(ctx, plan, areas)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("save the plan: %w", err)
	}
	return nil
}
