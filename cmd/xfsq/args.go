package main

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed puts flags where urfave/cli v2 reads them. It stops reading
// a command's flags at the first argument, but operators type `xfsq
// project add omni --bytes-hard 50GiB`; and it reads xfsq's own flags
// (--json, --root, …) only before the command, but the documented form is
// `xfsq snapshot omni --json`. So a command's flags move before its
// arguments, and xfsq's own flags, wherever they are, before the command.
// A flag that takes a value keeps it; everything after "--" stays an
// argument; a flag nobody defines stays where it is, for urfave to refuse.
func interspersed(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	global := []string{args[0]}
	var path, cmdFlags, positional []string // path: the command's names, with their own flags in between
	flags, cmds := app.Flags, app.Commands
	inPath, commandKnown := false, false
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			positional = append(positional, args[i:]...)
			i = len(args)
		case strings.HasPrefix(a, "-") && a != "-":
			f, dst := flagNamed(flags, a), &global
			switch {
			case !inPath:
			case f == nil && !isHelp(a) && flagNamed(app.Flags, a) != nil: // xfsq's own, after the command
				f = flagNamed(app.Flags, a)
			case commandKnown:
				dst = &cmdFlags
			default:
				dst = &path
			}
			*dst = append(*dst, a)
			if takesValue(f, a) && i+1 < len(args) {
				i++
				*dst = append(*dst, args[i])
			}
		case !commandKnown:
			if cmd := findCommand(cmds, a); cmd != nil {
				path = append(path, a)
				flags, cmds, inPath = cmd.Flags, cmd.Subcommands, true
				commandKnown = len(cmds) == 0
				continue
			}
			commandKnown = true // not a command: urfave says so, or it is the first argument
			positional = append(positional, a)
		default:
			positional = append(positional, a)
		}
	}
	return slices.Concat(global, path, cmdFlags, positional)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// flagNamed is the flag among flags that arg (e.g. "--bytes-hard" or
// "--area=cache") names, or nil.
func flagNamed(flags []cli.Flag, arg string) cli.Flag {
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

// isHelp: help is every command's own flag, never moved to xfsq's.
func isHelp(arg string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	return name == "help" || name == "h"
}

// takesValue reports whether flag f, written as arg, consumes the next
// argument: a non-boolean flag written without "=".
func takesValue(f cli.Flag, arg string) bool {
	if f == nil || strings.Contains(arg, "=") {
		return false
	}
	_, isBool := f.(*cli.BoolFlag)
	return !isBool
}
