package layering

import (
	"go/ast"
	"go/token"
	"strconv"
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
	read := 0
	eachSource(t, "journal", func(rel string, fset *token.FileSet, f *ast.File) {
		read++
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && names[s] {
					t.Errorf("%s:%d: the event name %s is spelled out: use the journal package's constant",
						rel, fset.Position(lit.Pos()).Line, lit.Value)
				}
			}
			return true
		})
	})
	if read < 50 {
		t.Fatalf("read %d Go files: the test sees too little of the module", read)
	}
}
