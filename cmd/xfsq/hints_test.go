package main

import (
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliwords"
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
		words := strings.Fields(cliwords.Commands[op].Line)
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
				t.Errorf("op %s: %q is no command of xfsq (in %q)", op, w, cliwords.Commands[op].Line)
				break
			}
			cmds = found.Subcommands
			if w == words[len(words)-1] && cliwords.Commands[op].Target != takesProject.MatchString(found.ArgsUsage) {
				t.Errorf("op %s: xfsq %s takes %q; the table says target %v", op, cliwords.Commands[op].Line, found.ArgsUsage, cliwords.Commands[op].Target)
			}
		}
	}
}
