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

// TestShellsReachNoStore type-checks every shell package (tests aside, as
// for the import rules) against the compiler's export data and fails on
// each use of sandbox.TestStore, the one door to a root's store left for
// library tests. Nothing else a shell holds leads to the store or the
// quota backend: sandbox.Manager and sandbox.Root have neither, and the
// core that does lives in sandbox/internal/core, which Go lets no shell
// import.
func TestShellsReachNoStore(t *testing.T) {
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
	facade, err := imp.Import(Module + "/sandbox")
	if err != nil {
		t.Fatal(err)
	}
	door := facade.Scope().Lookup("TestStore")
	if door == nil {
		t.Fatal("sandbox.TestStore is gone: update this test to what leads to the store now")
	}
	for _, name := range []string{"Manager", "Root"} {
		st := facade.Scope().Lookup(name).Type().Underlying().(*types.Struct)
		for i := range st.NumFields() {
			if f := st.Field(i); f.Exported() && (f.Name() == "Store" || f.Name() == "Backend") {
				t.Errorf("sandbox.%s has the field %s: the store and the backend stay in sandbox/internal/core", name, f.Name())
			}
		}
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
		info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
		if _, err := (&types.Config{Importer: imp}).Check(parts[0], fset, files, info); err != nil {
			t.Fatalf("type-check %s: %v", parts[0], err)
		}
		for id, obj := range info.Uses {
			if obj == door {
				t.Errorf("%s: a shell calls sandbox.TestStore: add a method to the library for what it needs", fset.Position(id.Pos()))
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
