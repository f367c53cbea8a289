// Package clihint words a hint as the CLI does (cmd/xfsq's flagOf and its
// command lines), for the tests that hold a library's hints to the CLI's
// words, and runs their tables (Check).
package clihint

import (
	"strings"
	"testing"

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

// Case is one refusal of a library's, as the tests of its messages hold
// it: what it says in words every shell can show, and what the operator
// should run, which travels as the hint beside the message.
type Case struct {
	Name string
	Err  func() error
	Kind errkind.Kind
	Says string // in the message
	Hint string // in the hint, worded as the CLI words it (Words)
}

// Check runs each case as a subtest: an error, whose message says Says
// and names no CLI flag, whose hint says Hint, and whose kind is Kind.
func Check(t *testing.T, cases []Case) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			err := c.Err()
			if err == nil {
				t.Fatal("no error")
			}
			msg, hint := err.Error(), errkind.HintIn(err, Words)
			if strings.Contains(msg, "--") {
				t.Errorf("message %q names a CLI flag; that belongs in the hint", msg)
			}
			if !strings.Contains(msg, c.Says) {
				t.Errorf("message %q does not say %q", msg, c.Says)
			}
			if !strings.Contains(hint, c.Hint) {
				t.Errorf("hint %q does not say %q (message %q)", hint, c.Hint, msg)
			}
			if k := errkind.Of(err); k != c.Kind {
				t.Errorf("kind %v, want %v", k, c.Kind)
			}
		})
	}
}
