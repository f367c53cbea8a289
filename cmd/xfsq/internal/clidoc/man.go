//go:build !urfave_cli_no_docs

package clidoc

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// The man page generator (urfave/cli's ToMan, which pulls in a Markdown
// renderer) is built only without urfave_cli_no_docs: scripts/man.sh runs
// it; the shipped binary leaves it out (scripts/build-xfsq.sh).
func init() {
	addDocCommand("man", "print the man page, xfsq(1), in roff", func(app *cli.App) (string, error) { return app.ToManWithSection(1) })
}

// addDocCommand adds a hidden command that prints a document rendered from
// the command tree.
func addDocCommand(name, usage string, render func(*cli.App) (string, error)) {
	DocCommands = append(DocCommands, &cli.Command{
		Name: name, Usage: usage, Hidden: true,
		Action: func(c *cli.Context) error {
			page, err := render(c.App)
			if err != nil {
				return err
			}
			fmt.Fprint(c.App.Writer, page)
			return nil
		},
	})
}
