// Package cliwords words what the library names in its errors and hints
// as this CLI says it: a field as the flag that sets it (bytes_hard →
// --bytes-hard), an operation as the command line that runs it (xfsq
// doctor --fix).
//
// It owns wording only: it never opens the root, the store or a backend,
// and never decides whether a hint is given (the library does).
package cliwords

import (
	"strings"

	"github.com/xfsq/xfsq/errkind"
)

// Flagged is err's message with the field the library names at its start
// put as the flag that sets it: depth → --depth, bytes_hard → --bytes-hard.
func Flagged(err error) string {
	msg := err.Error()
	if f := errkind.FieldOf(err); f != "" && strings.HasPrefix(msg, f+" ") {
		return FlagOf(f) + strings.TrimPrefix(msg, f)
	}
	return msg
}

// FlagOf is the flag that sets a field the library names: bytes_hard →
// --bytes-hard; areas, the API's list, is --area's comma-separated one.
func FlagOf(field string) string {
	if field == "areas" {
		field = "area"
	}
	return "--" + strings.ReplaceAll(field, "_", "-")
}

// Words words what a library hint names as this CLI does: an input as
// its flag, an operation as the command line that runs it.
var Words = errkind.Words{Field: FlagOf, Action: CommandLine}

// Commands is the command that runs each operation a hint may ask for,
// and whether it takes the action's target (a project) as its first
// argument (TestEveryHintedOpIsACommand holds both against the app).
var Commands = map[errkind.Op]struct {
	Line   string
	Target bool
}{
	errkind.OpInit:          {"init", false},
	errkind.OpDoctor:        {"doctor", false},
	errkind.OpProjectList:   {"project list", false},
	errkind.OpProjectShow:   {"project show", true},
	errkind.OpProjectAdd:    {"project add", true},
	errkind.OpProjectRemove: {"project rm", true},
	errkind.OpFilesRemove:   {"files rm", true},
	errkind.OpLeaseList:     {"lease list", false},
	errkind.OpLeaseRelease:  {"lease release", true},
	errkind.OpHostList:      {"host list", false},
	errkind.OpEvents:        {"events", false},
	errkind.OpSweep:         {"sweep", true},
	errkind.OpTop:           {"top", true},
	errkind.OpReport:        {"report", false},
}

// CommandLine is the command line that runs a: xfsq doctor --fix,
// xfsq init --backend auto, xfsq top _root --area inbound. A target the
// command takes no argument for (lease list lists every project's) is
// left out.
func CommandLine(a errkind.Action) string {
	c := Commands[a.Op]
	words := []string{"xfsq", c.Line}
	if a.Target != "" && c.Target {
		words = append(words, a.Target)
	}
	for _, g := range a.Args {
		words = append(words, FlagOf(g.Field))
		if g.Value != "" {
			words = append(words, g.Value)
		}
	}
	return strings.Join(words, " ")
}
