package main

import (
	"io"
	"slices"
	"strings"
	"testing"
)

func TestInterspersed(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	for _, tc := range []struct{ in, want string }{
		// A command's flags move before its arguments, with their values.
		{"project add omni --bytes-hard 50GiB", "project add --bytes-hard 50GiB omni"},
		{"snapshot omni other --area=cache --depth 2", "snapshot --area=cache --depth 2 omni other"},
		// xfsq's own flags move before the command, from wherever they are.
		{"snapshot omni --json", "--json snapshot omni"},
		{"snapshot --json omni --area cache", "--json snapshot --area cache omni"},
		{"report --root /srv --json", "--root /srv --json report"},
		{"--root /srv project list --json", "--root /srv --json project list"},
		{"project --json list", "--json project list"},
		{"snapshot omni --root=/srv", "--root=/srv snapshot omni"},
		{"files put omni a.txt --from f --db /x.db", "--db /x.db files put --from f omni a.txt"},
		// What follows "--" is an argument, even when it looks like a flag.
		{"files rm omni -- --json", "files rm omni -- --json"},
		// Help is the command's; a flag nobody defines stays for urfave to refuse.
		{"snapshot --help", "snapshot --help"},
		{"snapshot omni --bogus", "snapshot --bogus omni"},
		{"--bogus snapshot omni", "--bogus snapshot omni"},
		// A value missing at the end is left for urfave to report.
		{"snapshot omni --area", "snapshot --area omni"},
		{"nosuch --json", "--json nosuch"},
	} {
		in := append([]string{"xfsq"}, strings.Fields(tc.in)...)
		want := append([]string{"xfsq"}, strings.Fields(tc.want)...)
		if got := interspersed(app, in); !slices.Equal(got, want) {
			t.Errorf("%q:\n got %q\nwant %q", tc.in, got[1:], want[1:])
		}
	}
}
