package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/journal"
)

// TestEventNamesOnlyInJournal: no Go file outside the journal package
// spells an event type ("storage.evicted") as a string literal; each names
// the journal's constant, so that a renamed or new type is one edit and a
// typo does not compile. Tests are exempt: they hold the names on the wire
// (a CLI argument, an API query) to what users type.
func TestEventNamesOnlyInJournal(t *testing.T) {
	names := map[string]bool{}
	for _, typ := range journal.Types {
		names[string(typ)] = true
	}
	root := "../.."
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if (strings.HasPrefix(d.Name(), ".") && p != root) || rel == "journal" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		for _, lit := range eventLiterals(t, p, names) {
			t.Errorf("%s: the event name %s is spelled out: use the journal package's constant", rel, lit)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// eventLiterals are the string literals of file p that are an event name.
func eventLiterals(t *testing.T, p string, names map[string]bool) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil && names[s] {
				out = append(out, lit.Value+" (line "+strconv.Itoa(fset.Position(lit.Pos()).Line)+")")
			}
		}
		return true
	})
	return out
}
