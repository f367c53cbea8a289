package main

import (
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/xfsq/xfsq/errkind"
)

// takesProject: a command's first argument is a project.
var takesProject = regexp.MustCompile(`^\[?(PROJECT|NAME)\b`)

// Every operation a library hint may ask for is worded as a command this
// CLI has, given the target only if it takes one: a hint never sends the
// operator to a command that is not there, or with an argument it refuses.
func TestEveryHintedOpIsACommand(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	for _, op := range errkind.Ops {
		words := strings.Fields(commands[op].line)
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
				t.Errorf("op %s: %q is no command of xfsq (in %q)", op, w, commands[op].line)
				break
			}
			cmds = found.Subcommands
			if w == words[len(words)-1] && commands[op].target != takesProject.MatchString(found.ArgsUsage) {
				t.Errorf("op %s: xfsq %s takes %q; the table says target %v", op, commands[op].line, found.ArgsUsage, commands[op].target)
			}
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
		{errkind.Fix("see %s", errkind.Do(errkind.OpLeaseList, "omni")), "see xfsq lease list"},
	} {
		if got := c.h.In(cliWords); got != c.want {
			t.Errorf("%s: %q, want %q", c.h, got, c.want)
		}
	}
}
