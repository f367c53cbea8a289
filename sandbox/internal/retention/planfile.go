package retention

import (
	"fmt"
	"os"

	"github.com/xfsq/xfsq/internal/atomicfile"
	"github.com/xfsq/xfsq/sandbox/internal/core"
)

// ReadPlanFile loads the file encoding of a kept plan, for
// SweepOptions.Apply. A file that cannot be read is bad input: the caller
// named it.
func ReadPlanFile(path string) (PlanRef, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return PlanRef{}, &core.InputError{Msg: err.Error()}
	}
	return PlanRef{File: data}, nil
}

// WriteFile saves the kept plan's file to path for review, atomically: a
// reviewer never sees half a plan, and the store keeps its hash, so that
// only this file, unedited, applies.
func (k *KeptPlan) WriteFile(path string) error {
	if err := atomicfile.WriteFile(path, k.File, 0o644); err != nil {
		return fmt.Errorf("save the plan: %w", err)
	}
	return nil
}
