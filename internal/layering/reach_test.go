package layering

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// managerFields are the fields of sandbox.Manager no shell may select: the
// import rules keep the store and the quota backend out of a shell's
// imports, and a shell holding the manager must not reach them through it
// either, past the methods that journal and check.
var managerFields = []string{"Store", "Backend"}

// TestShellsSelectNoStoreOrBackendOfTheManager type-checks every shell
// package (tests aside, as for the import rules) against the compiler's
// export data and fails on each selection of a managerFields field of
// sandbox.Manager, through the manager or anything that embeds it.
func TestShellsSelectNoStoreOrBackendOfTheManager(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		prereq.Missing(t, "the shells are type-checked from go list -export: install Go")
	}
	statSources(t, "../..")
	shellPatterns := []string{"./cmd/...", "./server/...", "./client/..."}
	exports := map[string]string{}
	for _, line := range goList(t, append([]string{"-deps", "-export", "-f", "{{.ImportPath}}\t{{.Export}}"}, shellPatterns...)) {
		path, file, _ := strings.Cut(line, "\t")
		exports[path] = file
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) { return os.Open(exports[path]) })
	core, err := imp.Import(Module + "/sandbox")
	if err != nil {
		t.Fatal(err)
	}
	manager := core.Scope().Lookup("Manager").Type().Underlying().(*types.Struct)
	forbidden := map[types.Object]bool{}
	for i := range manager.NumFields() {
		for _, name := range managerFields {
			if f := manager.Field(i); f.Name() == name {
				forbidden[f] = true
			}
		}
	}
	if len(forbidden) != len(managerFields) {
		t.Fatalf("sandbox.Manager has %d of the fields %v: update managerFields", len(forbidden), managerFields)
	}
	checked := 0
	for _, line := range goList(t, append([]string{"-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \",\"}}"}, shellPatterns...)) {
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) < 3 || parts[2] == "" {
			continue // tests only
		}
		var files []*ast.File
		for _, name := range strings.Split(parts[2], ",") {
			f, err := parser.ParseFile(fset, filepath.Join(parts[1], name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
		if _, err := (&types.Config{Importer: imp}).Check(parts[0], fset, files, info); err != nil {
			t.Fatalf("type-check %s: %v", parts[0], err)
		}
		for expr, sel := range info.Selections {
			if sel.Kind() != types.FieldVal && sel.Kind() != types.MethodVal {
				continue
			}
			if forbidden[sel.Obj()] {
				t.Errorf("%s: a shell selects sandbox.Manager's %s: add a method to the library for what it needs", fset.Position(expr.Pos()), sel.Obj().Name())
			}
		}
		checked++
	}
	if checked < 2 {
		t.Fatalf("type-checked %d shell packages: the test sees nothing", checked)
	}
}

// goList runs go list from the module's root and returns its lines.
func goList(t *testing.T, args []string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}
