package retention

import (
	"context"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/errkind"
)

// A kept plan's id (the API's) and file (the CLI's) are two encodings of
// one stored plan: applied by either, it is spent for both.
func TestKeptPlanIsOnePlanByIDOrByFile(t *testing.T) {
	ctx := context.Background()
	s, _ := sweeperWithOmni(t, t.TempDir())
	for _, first := range []string{"id", "file"} {
		t.Run("applied by "+first, func(t *testing.T) {
			dry, err := s.Sweep(ctx, SweepOptions{Projects: []string{"omni"}, DryRun: true, Keep: true})
			if err != nil || dry.Kept == nil || dry.Kept.ID == "" || len(dry.Kept.File) == 0 {
				t.Fatalf("a kept dry run: %+v, %v", dry.Kept, err)
			}
			apply, again := PlanRef{ID: dry.Kept.ID}, PlanRef{File: dry.Kept.File}
			if first == "file" {
				apply, again = again, apply
			}
			if _, err := s.Sweep(ctx, SweepOptions{Apply: apply}); err != nil {
				t.Fatalf("apply by %s: %v", first, err)
			}
			_, err = s.Sweep(ctx, SweepOptions{Apply: again})
			if errkind.Of(err) != errkind.Unprocessable || !strings.Contains(err.Error(), "already applied") {
				t.Errorf("the same plan in its other encoding, after it was applied: %v, want it refused as applied", err)
			}
		})
	}
	if _, err := s.Sweep(ctx, SweepOptions{Keep: true}); errkind.Of(err) != errkind.Input {
		t.Errorf("a sweep that deletes, asked to keep its plan: %v, want bad input", err)
	}
}
