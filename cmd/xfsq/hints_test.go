package main

import (
	"io"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/xfsq/xfsq/errkind"
)

// Every operation a library hint may ask for is worded as a command this
// CLI has: a hint never sends the operator to a command that is not there.
func TestEveryHintedOpIsACommand(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	for _, op := range errkind.Ops {
		words := strings.Fields(commands[op])
		if len(words) == 0 {
			t.Errorf("op %s has no command", op)
			continue
		}
		cmds := app.Commands
		for _, w := range words {
			var found *cli.Command
			for _, c := range cmds {
				if c.Name == w || c.HasName(w) {
					found = c
				}
			}
			if found == nil {
				t.Errorf("op %s: %q is no command of xfsq (in %q)", op, w, commands[op])
				break
			}
			cmds = found.Subcommands
		}
	}
}

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
	} {
		if got := c.h.In(cliWords); got != c.want {
			t.Errorf("%s: %q, want %q", c.h, got, c.want)
		}
	}
}
