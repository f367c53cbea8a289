package layering

import (
	"go/ast"
	"go/token"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// namesAFlag: a CLI flag as an operator types it (--bytes-hard).
var namesAFlag = regexp.MustCompile(`(^|[^-\w])--[a-z]`)

// namesACommand is a CLI command as an operator types it (xfsq doctor),
// for each of the CLI's commands as its reference (docs/cli.md) lists
// them: a test of the commands, not of every phrase with "xfsq" in it.
func namesACommand(t *testing.T) *regexp.Regexp {
	ref, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, m := range regexp.MustCompile(`(?m)^### xfsq ([a-z-]+)$`).FindAllSubmatch(ref, -1) {
		cmds = append(cmds, string(m[1]))
	}
	if len(cmds) < 10 {
		t.Fatalf("docs/cli.md lists %d commands: is it the CLI reference still?", len(cmds))
	}
	return regexp.MustCompile(`\bxfsq (` + strings.Join(cmds, "|") + `)\b`)
}

// flagShells may name their own flags and commands: the CLI, the HTTP
// server and what runs beside it (their errors at start-up are the serve
// command's), and programs that run others (Prometheus, a test VM's init
// script, the screenshot tool that runs xfsq serve).
var flagShells = []string{"cmd/", "server/", "daemon/", "scripts/", "internal/testsupport/promtest/", "internal/testsupport/kerneltest/"}

// flagNamesAllowed are the library literals that may name a CLI flag or
// command, by file and a piece of the literal, each for a reason that
// makes it no hint. Only:
//   - journal/payloads.go "project rm --purge": the policy a purge's
//     deletions are journalled under (storage.evicted's policy); records
//     already written say it, so it is data as first written, not words
//     a shell chose.
var flagNamesAllowed = map[string][]string{
	"journal/payloads.go": {"project rm --purge"},
}

// TestLibraryNamesNoFlag: no string literal of a library package names a
// CLI flag or command; a hint names the fields and operations it means
// (errkind.Field, errkind.Action) and each shell words them, the CLI as
// flags and command lines, the API as JSON members and routes.
func TestLibraryNamesNoFlag(t *testing.T) {
	namesACommand := namesACommand(t)
	used := map[string]bool{}
	eachSource(t, "cmd", func(rel string, fset *token.FileSet, f *ast.File) {
		for _, shell := range flagShells {
			if strings.HasPrefix(rel, shell) {
				return
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || !namesAFlag.MatchString(s) && !namesACommand.MatchString(s) {
				return true
			}
			for _, allowed := range flagNamesAllowed[rel] {
				if strings.Contains(s, allowed) {
					used[rel+"\x00"+allowed] = true
					return true
				}
			}
			t.Errorf("%s:%d: %s names a CLI flag or command: name the field or the operation in a hint (errkind.Field, errkind.Action) and let each shell word it",
				rel, fset.Position(lit.Pos()).Line, lit.Value)
			return true
		})
	})
	for file, pieces := range flagNamesAllowed {
		for _, p := range pieces {
			if !used[file+"\x00"+p] {
				t.Errorf("%s: %q is allowed to name a flag but no literal does: take it off flagNamesAllowed", file, p)
			}
		}
	}
}
