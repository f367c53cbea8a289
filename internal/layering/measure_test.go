package layering

import (
	"go/ast"
	"go/token"
	"strconv"
	"testing"
)

// walkers are the files outside inventory that may walk a tree with
// inventory.Walk or WalkFile, each with why. Everything else measures a
// tree through inventory.Measure or MeasureFile, the one measure, so that
// the fallback's usage, a sweep's figures and the credit a removal gives
// the ledger cannot disagree.
var walkers = map[string]string{
	"sandbox/internal/core/treewalk/walktree.go": "a snapshot and top keep the walk itself (its tree and top files), not only a measure, walked beneath the tenant's mounts",
}

// pendingWalkers still measure with a walk of their own, each with what
// keeps it from the one measure; the test says when one no longer does.
var pendingWalkers = map[string]string{}

func TestTreeMeasurementExistsOnce(t *testing.T) {
	const inventory = Module + "/inventory"
	found := map[string]bool{}
	eachSource(t, "inventory", func(rel string, _ *token.FileSet, f *ast.File) {
		name := ""
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == inventory {
				name = "inventory"
				if imp.Name != nil {
					name = imp.Name.Name
				}
			}
		}
		if name == "" {
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "Walk" && sel.Sel.Name != "WalkFile") {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == name {
				found[rel] = true
			}
			return true
		})
	})
	if !found["sandbox/internal/core/treewalk/walktree.go"] {
		t.Fatalf("the snapshot's walk was not found: the test sees nothing (found %v)", found)
	}
	for file := range found {
		if _, ok := walkers[file]; ok {
			continue
		}
		if _, ok := pendingWalkers[file]; ok {
			continue
		}
		t.Errorf("%s measures a tree with inventory.Walk/WalkFile: use inventory.Measure or MeasureFile, the one measure", file)
	}
	for file := range pendingWalkers {
		if !found[file] {
			t.Logf("pending walker %s no longer walks: delete it from pendingWalkers", file)
		}
	}
}
