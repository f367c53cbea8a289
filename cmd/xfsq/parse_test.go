package main

import (
	"strings"
	"testing"
)

// Parsing as an operator types (issue 17 item 8): "--" ends flags
// wherever it is, negative numbers are values, a flag without its value
// is named, --budget takes days, extra arguments and unknown filters are
// refused, and --since takes a date.
func TestParsingAsTyped(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	for _, tc := range []struct {
		args []string
		code int
		want string // in stderr
	}{
		// A negative number is a value, refused by the size rule, not "flag not defined".
		{[]string{"settings", "set", "default_quota", "-1"}, 2, `"-1" is not a size`},
		{[]string{"project", "set", "omni", "--bytes-hard", "-5g"}, 2, `"-5g" is not a size`},
		// A flag missing its value is named, with what it takes.
		{[]string{"project", "add", "x", "--bytes-hard"}, 2, "--bytes-hard needs a SIZE"},
		{[]string{"snapshot", "omni", "--depth"}, 2, "--depth needs a NUMBER"},
		// "--" after an argument ends flags too, and is not counted.
		{[]string{"project", "add", "foo", "--", "bar"}, 2, "takes one project NAME, got 2 arguments"},
		// Extra arguments are refused, not ignored.
		{[]string{"report", "X"}, 2, `report takes no arguments, got "X"`},
		{[]string{"project", "list", "omni"}, 2, "project list takes no arguments"},
		{[]string{"doctor", "--fix", "now"}, 2, "doctor takes no arguments"},
		// Filters name something real.
		{[]string{"events", "--type", "project.add"}, 2, `event type "project.add": use one of project.added`},
		{[]string{"events", "--project", "nope"}, 1, `project "nope" not found`},
		{[]string{"events", "--since", "2020-13-01"}, 2, "a date (2026-11-30)"},
		{[]string{"sweep", "omni", "--dry-run", "--budget", "soon"}, 2, `--budget "soon"`},
	} {
		r := s.run(tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("xfsq %s: exit %d, stderr %q; want exit %d saying %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.code, tc.want)
		}
	}
	// A project named like a flag's value after "--", wherever "--" is.
	s.ok("project", "add", "--bytes-hard", "1m", "--", "dashed")
	s.ok("project", "add", "later", "--bytes-hard", "1m", "--")
	// Durations as --ttl takes them.
	s.ok("snapshot", "omni", "--budget", "1d")
	s.ok("sweep", "omni", "--dry-run", "--budget", "1d")
	if out := s.ok("events", "--since", "2020-01-01", "--type", "project.added"); !strings.Contains(out, "omni") {
		t.Errorf("events --since 2020-01-01: %q", out)
	}
	// A removed project's history stays searchable.
	s.ok("project", "rm", "later")
	if out := s.ok("events", "--project", "later"); !strings.Contains(out, "project.removed") {
		t.Errorf("events of a removed project: %q", out)
	}
}
