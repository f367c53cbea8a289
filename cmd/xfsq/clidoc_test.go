//go:build !urfave_cli_no_docs

package main

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/cmd/xfsq/internal/clidoc"
)

// docs/cli.md is the command tree as --help shows it: adding, renaming or
// rewording a command or flag without regenerating it fails here.
func TestCLIReferenceIsCurrent(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	app.Setup() // adds --version, as running the command does
	want := clidoc.Reference(app)
	got, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("docs/cli.md is stale: run go generate ./cmd/xfsq (first difference at byte %d)", firstDifference(string(got), want))
	}
	for _, each := range []string{"### xfsq project add", "`--bytes-hard`", "### xfsq serve", "`XFSQ_ROOT`"} {
		if !strings.Contains(want, each) {
			t.Errorf("the reference lacks %q", each)
		}
	}
	if strings.Contains(want, "cli-reference") || strings.Contains(want, "### xfsq man") {
		t.Error("the reference lists a hidden command")
	}
}

func firstDifference(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
