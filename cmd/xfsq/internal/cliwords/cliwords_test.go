package cliwords

import (
	"testing"

	"github.com/xfsq/xfsq/errkind"
)

// The CLI words a hint's actions and fields as its command lines and
// flags: the hints its tests assert (doctor --fix, --area inbound) read as
// they always have.
func TestCLIWordsHints(t *testing.T) {
	for _, c := range []struct {
		h    errkind.Hint
		want string
	}{
		{errkind.Fix("run %s", errkind.Do(errkind.OpDoctor, "", "fix", "")), "run xfsq doctor --fix"},
		{errkind.Fix("%s", errkind.Do(errkind.OpSweep, "_root", "areas", "inbound")), "xfsq sweep _root --area inbound"},
		{errkind.Fix("run %s", errkind.Do(errkind.OpInit, "", "backend", "fallback")), "run xfsq init --backend fallback"},
		{errkind.Fix("give %s", errkind.Field("take_over_host")), "give --take-over-host"},
		{errkind.Fix("see %s", errkind.Do(errkind.OpLeaseList, "omni")), "see xfsq lease list"},
	} {
		if got := c.h.In(Words); got != c.want {
			t.Errorf("%s: %q, want %q", c.h, got, c.want)
		}
	}
}
