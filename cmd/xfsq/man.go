//go:build !urfave_cli_no_docs

package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// The man page generator (urfave/cli's ToMan, which pulls in a Markdown
// renderer) is built only without urfave_cli_no_docs: scripts/man.sh runs
// it; the shipped binary leaves it out (scripts/build-xfsq.sh).
func init() {
	docCommands = append(docCommands, &cli.Command{
		Name: "man", Usage: "print the man page, xfsq(1), in roff", Hidden: true,
		Action: func(c *cli.Context) error {
			page, err := c.App.ToManWithSection(1)
			if err != nil {
				return err
			}
			fmt.Fprint(c.App.Writer, page)
			return nil
		},
	})
}
