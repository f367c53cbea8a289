package retention

import (
	"context"
	"testing"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/testsupport/clihint"
	"github.com/xfsq/xfsq/sandbox/internal/settingwrites"
	"github.com/xfsq/xfsq/sweep"
)

// The plan's refusals say what is wrong in words every shell can show;
// what the operator should run travels as the hint (as the core's
// TestMessagesNameNoCLIFlagTheHintDoes holds for its own). Each refusal
// keeps its kind.
func TestPlanMessagesNameNoCLIFlagTheHintDoes(t *testing.T) {
	ctx := context.Background()
	s, m := sweeperWithOmni(t, t.TempDir())
	saved, err := s.SavePlan(ctx, sweep.Plan{Evict: []sweep.Eviction{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := settingwrites.New(m).SetSetting(ctx, "scratch_ttl", "2d"); err != nil {
		t.Fatal(err)
	}
	cases := []clihint.Case{
		{Name: "a file that is not a saved plan", Err: func() error { _, err := s.checkPlan(ctx, []byte(`{"evicted": []}`)); return err },
			Kind: errkind.Input, Says: "sweep plan refused: not a plan saved by a dry run of this xfsq", Hint: "xfsq sweep --dry-run --plan-out FILE"},
		{Name: "a plan made under other settings", Err: func() error { _, err := s.checkPlan(ctx, saved); return err },
			Kind: errkind.Unprocessable, Says: "was made under other settings than those in force now", Hint: "xfsq events --type settings.changed; make a new one"},
	}
	clihint.Check(t, cases)
}
