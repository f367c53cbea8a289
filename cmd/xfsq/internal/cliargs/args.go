package cliargs

import (
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/units"
)

// Interspersed puts flags where urfave/cli v2 reads them. It stops reading
// a command's flags at the first argument, but operators type `xfsq
// project add omni --bytes-hard 50GiB`; and it reads xfsq's own flags
// (--json, --root, …) only before the command, but the documented form is
// `xfsq snapshot omni --json`. So a command's flags move before its
// arguments, and xfsq's own flags, wherever they are, before the command.
// A flag that takes a value keeps it, and one left without its value is
// refused here, naming it (urfave would take the next argument, or say
// "got 0 arguments"). Everything after "--", wherever it is, is an
// argument, and so is a negative number no flag defines ("-1"): the
// arguments are handed to urfave after a "--" of their own, so that none
// of them is read as a flag. A flag nobody defines stays where it is, for
// urfave to refuse.
func Interspersed(app *cli.App, args []string) ([]string, error) {
	if len(args) < 2 {
		return args, nil
	}
	global := []string{args[0]}
	var path, cmdFlags, positional []string // path: the command's names, with their own flags in between
	flags, cmds := app.Flags, app.Commands
	inPath, commandKnown := false, false
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			positional = append(positional, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-") && a != "-" && !(isNegativeNumber(a) && flagNamed(flags, a) == nil):
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
			if takesValue(f, a) {
				if i+1 >= len(args) || args[i+1] == "--" || flagNamed(flags, args[i+1]) != nil || flagNamed(app.Flags, args[i+1]) != nil {
					return nil, Usagef("%s needs %s: see xfsq %s--help", strings.SplitN(a, "=", 2)[0], valueName(f),
						strings.Join(append(commandWords(path), ""), " "))
				}
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
			if inPath && (a == "help" || a == "h") && len(cmds) > 0 {
				// `xfsq project help add`: urfave's help, for a command with subcommands.
				path, flags, cmds = append(path, a), nil, nil
				continue
			}
			if inPath || len(path) > 0 {
				positional = append(positional, a)
			} else {
				// No command named yet: this is the one urfave looks for.
				path = append(path, a)
			}
		default:
			positional = append(positional, a)
		}
	}
	out := slices.Concat(global, path, cmdFlags)
	if len(positional) > 0 {
		if !inPath {
			// Arguments with no command: urfave reports the first as unknown.
			return slices.Concat(out, positional), nil
		}
		out = append(append(out, "--"), positional...)
	}
	return out, nil
}

// commandWords is the command path without its flags, for a hint.
func commandWords(path []string) []string {
	var w []string
	for _, p := range path {
		if !strings.HasPrefix(p, "-") {
			w = append(w, p)
		}
	}
	return w
}

// isNegativeNumber: "-1", "-5g", "-0.5": a value an operator typed, not a
// flag (-[0-9][0-9.]*[A-Za-z]*). Not a regexp: every command asks it of
// its flags, and compiling one is work at every start.
func isNegativeNumber(a string) bool {
	if len(a) < 2 || a[0] != '-' || a[1] < '0' || a[1] > '9' {
		return false
	}
	i := 2
	for i < len(a) && (a[i] >= '0' && a[i] <= '9' || a[i] == '.') {
		i++
	}
	for i < len(a) && (a[i] >= 'a' && a[i] <= 'z' || a[i] >= 'A' && a[i] <= 'Z') {
		i++
	}
	return i == len(a)
}

// valueName is what a flag's value is, for "--bytes-hard needs a SIZE".
func valueName(f cli.Flag) string {
	switch f := f.(type) {
	case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag:
		return "a NUMBER"
	case *cli.DurationFlag:
		return "a DURATION (e.g. 30m, 24h, 7d)"
	case *cli.StringFlag:
		u := f.Usage
		switch {
		case strings.Contains(u, "SIZE"):
			return "a SIZE (e.g. 512k, 5g, 50GiB)"
		case strings.Contains(u, "DURATION"):
			return "a DURATION (e.g. 30m, 24h, 7d)"
		case strings.Contains(u, "count"), strings.Contains(u, "NUMBER"):
			return "a NUMBER"
		case strings.Contains(u, "FILE"):
			return "a FILE"
		}
	}
	return "a value"
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
	if !strings.HasPrefix(arg, "-") {
		return nil
	}
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

// DurationFlag is a flag that takes a duration in xfsq's forms (45s, 30m,
// 24h, 7d, 2w or a Go duration), as --ttl and the settings do; urfave's
// own DurationFlag knows no days.
func DurationFlag(name, value, usage string) cli.Flag {
	return &cli.StringFlag{Name: name, Value: value, Usage: usage + " (DURATION: " + units.DurationForms + ")"}
}

// Duration reads a flag made by DurationFlag; unset and empty are 0.
func Duration(c *cli.Context, name string) (time.Duration, error) {
	s := c.String(name)
	if s == "" {
		return 0, nil
	}
	d, err := units.ParseDuration(s)
	if err != nil {
		return 0, Usagef("--%s %q: %v", name, s, err)
	}
	return d, nil
}

// NoArguments refuses arguments to a command that takes none (`report
// X`), rather than ignoring them: the operator meant something by them.
func NoArguments(c *cli.Context) error {
	if c.NArg() == 0 {
		return nil
	}
	name := CommandName(c)
	return Usagef("%s takes no arguments, got %q: see xfsq %s --help", name, strings.Join(c.Args().Slice(), " "), name)
}

// WrapLeaves gives every command without subcommands two rules: one that
// declares no ArgsUsage refuses arguments, and none has a "help"
// subcommand (urfave adds one to each, so `xfsq project add h` printed the
// help text instead of adding a project named h; --help stays).
func WrapLeaves(cmds []*cli.Command) {
	for _, c := range cmds {
		if len(c.Subcommands) > 0 {
			WrapLeaves(c.Subcommands)
			continue
		}
		c.HideHelpCommand = true
		if c.ArgsUsage == "" && c.Action != nil {
			action := c.Action
			c.Action = func(ctx *cli.Context) error {
				if err := NoArguments(ctx); err != nil {
					return err
				}
				return action(ctx)
			}
		}
	}
}

// OnUsageError words urfave's parse errors as xfsq's usage errors, naming
// the help to read.
func OnUsageError(c *cli.Context, err error, _ bool) error {
	if name := CommandName(c); name != "" {
		return Usagef("%v: see xfsq %s --help", err, name)
	}
	return Usagef("%v: see xfsq --help", err)
}

// SetUsageErrors gives every command OnUsageError, and a command of
// subcommands run without one its help (exit 2) or, with --json, an error.
func SetUsageErrors(cmds []*cli.Command) {
	for _, c := range cmds {
		c.OnUsageError = OnUsageError
		SetUsageErrors(c.Subcommands)
		if len(c.Subcommands) > 0 && c.Action == nil {
			c.Action = func(c *cli.Context) error {
				if c.NArg() > 0 {
					return Usagef("unknown command %q: see xfsq %s --help", c.Args().First(), CommandName(c))
				}
				if c.Bool("json") {
					return Usagef("%s needs a command: see xfsq %s --help", CommandName(c), CommandName(c))
				}
				cli.ShowSubcommandHelp(c)
				return &ExitError{Code: errkind.ExitUsage}
			}
		}
	}
}

// NumberFlag reads an optional size or count flag; nil when not given.
func NumberFlag(c *cli.Context, name string, parse func(string) (uint64, error)) (*uint64, error) {
	if !c.IsSet(name) {
		return nil, nil
	}
	n, err := parse(c.String(name))
	if err != nil {
		return nil, Usagef("--%s: %v", name, err)
	}
	return &n, nil
}

// LimitFlags reads the four limits a command takes, each flag named
// after prefix (--bytes-hard, --cache-bytes-hard); nil where not given.
func LimitFlags(c *cli.Context, prefix string) (sandbox.LimitChange, error) {
	var ch sandbox.LimitChange
	var err error
	for _, f := range []struct {
		name  string
		dst   **uint64
		parse func(string) (uint64, error)
	}{
		{prefix + "bytes-soft", &ch.BytesSoft, units.ParseSize}, {prefix + "bytes-hard", &ch.BytesHard, units.ParseSize},
		{prefix + "inodes-soft", &ch.InodesSoft, units.ParseCount}, {prefix + "inodes-hard", &ch.InodesHard, units.ParseCount},
	} {
		if *f.dst, err = NumberFlag(c, f.name, f.parse); err != nil {
			return ch, err
		}
		if strings.Contains(f.name, "bytes-") {
			if err := CheckBareBytes(c, f.name); err != nil {
				return ch, err
			}
		}
	}
	return ch, nil
}

// OneArg returns the single positional argument a command takes.
func OneArg(c *cli.Context, what string) (string, error) {
	if c.NArg() != 1 {
		name := CommandName(c)
		return "", Usagef("%s takes one %s, got %d arguments: see xfsq %s --help", name, what, c.NArg(), name)
	}
	return c.Args().First(), nil
}

// CommandName is the command's path without the program, e.g. "project
// add"; "" for the program itself.
func CommandName(c *cli.Context) string {
	if c.Command == nil || c.Command.HelpName == c.App.Name {
		return ""
	}
	return strings.TrimPrefix(c.Command.HelpName, c.App.Name+" ")
}

// SplitList is a comma-separated flag's items, trimmed, empty ones left out.
func SplitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
