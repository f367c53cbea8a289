// Package clihint words a hint as the CLI does (cmd/xfsq's flagOf and its
// command lines), for the tests that hold a library's hints to the CLI's
// words.
package clihint

import (
	"strings"

	"github.com/xfsq/xfsq/errkind"
)

// Flag words a field as the CLI's flag.
func Flag(field string) string {
	if field == "areas" {
		field = "area"
	}
	return "--" + strings.ReplaceAll(field, "_", "-")
}

// Words words a field as its flag and an action as its command line, for
// the commands the library's hints name.
var Words = errkind.Words{Field: Flag, Action: func(a errkind.Action) string {
	words := []string{"xfsq", map[errkind.Op]string{errkind.OpDoctor: "doctor", errkind.OpEvents: "events",
		errkind.OpSweep: "sweep", errkind.OpTop: "top"}[a.Op]}
	if a.Target != "" {
		words = append(words, a.Target)
	}
	for _, g := range a.Args {
		words = append(words, Flag(g.Field))
		if g.Value != "" {
			words = append(words, g.Value)
		}
	}
	return strings.Join(words, " ")
}}
