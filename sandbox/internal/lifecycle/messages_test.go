package lifecycle

import (
	"errors"
	"testing"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/testsupport/clihint"
	"github.com/xfsq/xfsq/sandbox/internal/core"
)

// An add that failed and could not be rolled back says so in words every
// shell can show; the repair, in the CLI's flags, travels as the hint.
func TestRollbackFailedNamesNoCLIFlagTheHintDoes(t *testing.T) {
	clihint.Check(t, []clihint.Case{
		{Name: "an add that failed and could not be rolled back", Err: func() error {
			return rollbackFailed(errors.New("mkdir: permission denied"), errors.New("rmdir: busy"))
		}, Kind: errkind.Internal, Says: "(and rolling back failed: rmdir: busy)", Hint: "xfsq doctor --fix"},
	})
}

// A failed add keeps the kind of what failed beside its repair hint: a
// quota refusal stays a refusal.
func TestRollbackFailedKeepsTheKind(t *testing.T) {
	err := rollbackFailed(notFound("omni"), errors.New("rmdir: busy"))
	if errkind.Of(err) != errkind.NotFound || !errors.Is(err, core.ErrNotFound) {
		t.Errorf("%v: kind %v, want not found", err, errkind.Of(err))
	}
}
