package main

import (
	_ "embed"
	"fmt"

	"github.com/urfave/cli/v2"
)

// The bash and zsh scripts ask the binary itself for the words that may
// follow (urfave/cli's --generate-bash-completion), so they always match
// the command tree they were printed by; fish's is generated from it.

//go:embed completion/xfsq.bash
var bashCompletion string

//go:embed completion/xfsq.zsh
var zshCompletion string

func completionCommand() *cli.Command {
	return &cli.Command{
		Name: "completion", Usage: "print the shell completion script for bash, zsh or fish", ArgsUsage: "bash|zsh|fish",
		Description: "Install (see README):\n" +
			"   bash:  xfsq completion bash > /etc/bash_completion.d/xfsq\n" +
			"   zsh:   xfsq completion zsh > \"${fpath[1]}/_xfsq\"\n" +
			"   fish:  xfsq completion fish > ~/.config/fish/completions/xfsq.fish",
		Action: func(c *cli.Context) error {
			shell, err := oneArg(c, "shell (bash, zsh or fish)")
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
				return usagef("completion %q: use bash, zsh or fish", shell)
			}
			return nil
		},
	}
}
