package main

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliargs"
)

func TestInterspersed(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	for _, tc := range []struct{ in, want string }{
		// A command's flags move before its arguments, with their values.
		{"project add omni --bytes-hard 50GiB", "project add --bytes-hard 50GiB -- omni"},
		{"snapshot omni other --area=cache --depth 2", "snapshot --area=cache --depth 2 -- omni other"},
		// xfsq's own flags move before the command, from wherever they are.
		{"snapshot omni --json", "--json snapshot -- omni"},
		{"snapshot --json omni --area cache", "--json snapshot --area cache -- omni"},
		{"report --root /srv --json", "--root /srv --json report"},
		{"--root /srv project list --json", "--root /srv --json project list"},
		{"project --json list", "--json project list"},
		{"snapshot omni --root=/srv", "--root=/srv snapshot -- omni"},
		{"files put omni a.txt --from f --db /x.db", "--db /x.db files put --from f -- omni a.txt"},
		// What follows "--" is an argument, even when it looks like a flag,
		// wherever the "--" is; so is a negative number no flag defines.
		{"files rm omni -- --json", "files rm -- omni --json"},
		{"project add -- foo", "project add -- foo"},
		{"project add foo -- --bytes-hard", "project add -- foo --bytes-hard"},
		{"settings set default_quota -1", "settings set -- default_quota -1"},
		{"project add omni --bytes-hard -1", "project add --bytes-hard -1 -- omni"},
		// Help is the command's; a flag nobody defines stays for urfave to refuse.
		{"snapshot --help", "snapshot --help"},
		{"snapshot omni --bogus", "snapshot --bogus -- omni"},
		{"--bogus snapshot omni", "--bogus snapshot -- omni"},
		{"project help add", "project help -- add"},
		{"project bogus", "project -- bogus"},
		{"nosuch --json", "--json nosuch"},
		{"nosuch other", "nosuch other"},
	} {
		in := append([]string{"xfsq"}, strings.Fields(tc.in)...)
		want := append([]string{"xfsq"}, strings.Fields(tc.want)...)
		if got, err := cliargs.Interspersed(app, in); err != nil || !slices.Equal(got, want) {
			t.Errorf("%q:\n got %q, %v\nwant %q", tc.in, got, err, want[1:])
		}
	}
}

// A flag left without its value is refused naming the flag and what it
// takes, never handed on to swallow the next argument or to be reported
// as a missing positional.
func TestInterspersedMissingValue(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	for _, tc := range []struct{ in, want string }{
		{"project add x --bytes-hard", "--bytes-hard needs a SIZE"},
		{"project add --bytes-hard -- x", "--bytes-hard needs a SIZE"},
		{"project add x --bytes-hard --json", "--bytes-hard needs a SIZE"},
		{"snapshot omni --depth", "--depth needs a NUMBER"},
		{"snapshot omni --budget", "--budget needs a DURATION"},
		{"report --root", "--root needs a value"},
	} {
		in := append([]string{"xfsq"}, strings.Fields(tc.in)...)
		got, err := cliargs.Interspersed(app, in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %q, %v; want an error saying %q", tc.in, got, err, tc.want)
		}
	}
}
