package retention

import (
	"context"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/testsupport/clihint"
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
	if _, _, err := m.SetSetting(ctx, "scratch_ttl", "2d"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		err  func() error
		kind errkind.Kind
		says string // in the message
		hint string // in the hint
	}{
		{"a file that is not a saved plan", func() error { _, err := s.checkPlan(ctx, []byte(`{"evicted": []}`)); return err },
			errkind.Input, "sweep plan refused: not a plan saved by a dry run of this xfsq", "xfsq sweep --dry-run --plan-out FILE"},
		{"a plan made under other settings", func() error { _, err := s.checkPlan(ctx, saved); return err },
			errkind.Unprocessable, "was made under other settings than those in force now", "xfsq events --type settings.changed; make a new one"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.err()
			if err == nil {
				t.Fatal("no error")
			}
			msg, hint := err.Error(), errkind.HintIn(err, clihint.Words)
			if strings.Contains(msg, "--") {
				t.Errorf("message %q names a CLI flag; that belongs in the hint", msg)
			}
			if !strings.Contains(msg, c.says) {
				t.Errorf("message %q does not say %q", msg, c.says)
			}
			if !strings.Contains(hint, c.hint) {
				t.Errorf("hint %q does not say %q (message %q)", hint, c.hint, msg)
			}
			if k := errkind.Of(err); k != c.kind {
				t.Errorf("kind %v, want %v", k, c.kind)
			}
		})
	}
}
