package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed moves a command's flags before its positional arguments:
// urfave/cli v2 stops reading flags at the first argument, but operators
// type `xfsq project add omni --bytes-hard 50GiB`. Flags that take a value
// keep it; everything after "--" stays an argument.
func interspersed(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	flags := app.Flags
	cmds := app.Commands
	i := 1
	// Global flags and the command path.
	for i < len(args) {
		a := args[i]
		if strings.HasPrefix(a, "-") && a != "-" && a != "--" {
			out = append(out, a)
			if takesValue(flags, a) && i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
			i++
			continue
		}
		cmd := findCommand(cmds, a)
		if cmd == nil {
			break
		}
		out = append(out, a)
		flags, cmds = cmd.Flags, cmd.Subcommands
		i++
		if len(cmds) == 0 {
			break
		}
	}
	var positional []string
	for i < len(args) {
		a := args[i]
		switch {
		case a == "--":
			positional = append(positional, args[i:]...)
			i = len(args)
			continue
		case strings.HasPrefix(a, "-") && a != "-":
			out = append(out, a)
			if takesValue(flags, a) && i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
		default:
			positional = append(positional, a)
		}
		i++
	}
	return append(out, positional...)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// takesValue reports whether flag arg (e.g. "--bytes-hard") consumes the
// next argument: a non-boolean flag written without "=".
func takesValue(flags []cli.Flag, arg string) bool {
	name := strings.TrimLeft(arg, "-")
	if strings.Contains(name, "=") {
		return false
	}
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				_, isBool := f.(*cli.BoolFlag)
				return !isBool
			}
		}
	}
	return false
}
