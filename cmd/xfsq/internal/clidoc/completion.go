// Package clidoc is what xfsq prints about itself, rendered from the one
// command tree that also makes --help: the shell completion scripts, the
// man page and docs/cli.md, so that none can disagree with the commands.
//
// It reads the command tree only: it never opens the root, the store or a
// backend, and adds no behaviour to a command. The man page and the
// reference are built in only without urfave_cli_no_docs (the shipped
// binary leaves them and their Markdown renderer out).
package clidoc

import (
	_ "embed"
	"fmt"

	"github.com/urfave/cli/v2"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliargs"
)

// The bash and zsh scripts ask the binary itself for the words that may
// follow (urfave/cli's --generate-bash-completion), so they always match
// the command tree they were printed by; fish's is generated from it.

//go:embed completion/xfsq.bash
var bashCompletion string

//go:embed completion/xfsq.zsh
var zshCompletion string

// CompletionCommand is xfsq completion SHELL.
func CompletionCommand() *cli.Command {
	return &cli.Command{
		Name: "completion", Usage: "print the shell completion script for bash, zsh or fish", ArgsUsage: "bash|zsh|fish",
		Description: "Install (see README):\n" +
			"   bash:  xfsq completion bash > /etc/bash_completion.d/xfsq\n" +
			"   zsh:   xfsq completion zsh > \"${fpath[1]}/_xfsq\"\n" +
			"   fish:  xfsq completion fish > ~/.config/fish/completions/xfsq.fish",
		Action: func(c *cli.Context) error {
			shell, err := cliargs.OneArg(c, "shell (bash, zsh or fish)")
			if err != nil {
				return err
			}
			switch shell {
			case "bash":
				fmt.Fprint(c.App.Writer, bashCompletion)
			case "zsh":
				fmt.Fprint(c.App.Writer, zshCompletion)
			case "fish":
				script, err := c.App.ToFishCompletion()
				if err != nil {
					return err
				}
				fmt.Fprint(c.App.Writer, script)
			default:
				return cliargs.Usagef("completion %q: use bash, zsh or fish", shell)
			}
			return nil
		},
	}
}

// DocCommands are the hidden commands that print a document rendered from
// the command tree; empty unless built without urfave_cli_no_docs.
var DocCommands []*cli.Command
