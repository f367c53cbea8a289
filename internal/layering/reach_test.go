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
	"slices"
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
	c := newChecker(t, "./cmd/...", "./server/...", "./client/...")
	facade := c.load(t, Module+"/sandbox")
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
	checked := c.eachUse(t, func(_ string, id *ast.Ident, obj types.Object) {
		if obj == door {
			t.Errorf("%s: a shell calls sandbox.TestStore: add a method to the library for what it needs", c.fset.Position(id.Pos()))
		}
	})
	if checked < 2 {
		t.Fatalf("type-checked %d shell packages: the test sees nothing", checked)
	}
}

// TestRawSQLOnlyInStore type-checks every package outside store/ (tests
// and test support aside) and fails on each use of the database itself:
// anything of database/sql, sqlx or the drivers, and the handle the
// store's areas share (store/internal/base's DB and Tx: their SQL field
// and their query helpers). store.Store and store.Tx promote all of it
// through their embedded areas, so the core could write a query of its
// own without importing any of it; every query stays a method of the
// store, named for what it asks.
func TestRawSQLOnlyInStore(t *testing.T) {
	c := newChecker(t, "./...")
	base := c.load(t, Module+"/store/internal/base")
	raw := map[types.Object]bool{}
	for _, typ := range []string{"DB", "Tx"} {
		named := base.Scope().Lookup(typ).Type()
		for _, member := range []string{"SQL", "Exec", "Get", "Sel", "Prepared", "WithoutJIT"} {
			if obj, _, _ := types.LookupFieldOrMethod(named, true, base, member); obj != nil {
				raw[obj] = true
			}
		}
	}
	if len(raw) < 6 {
		t.Fatalf("found %d of base.DB's and base.Tx's query members: update this test to what they are now", len(raw))
	}
	databases := []string{"database/sql", "github.com/jmoiron/sqlx", "github.com/lib/pq", "modernc.org/sqlite"}
	checked := c.eachUse(t, func(pkg string, id *ast.Ident, obj types.Object) {
		if pkg == Module+"/store" || strings.HasPrefix(pkg, Module+"/store/") || strings.HasPrefix(pkg, Module+"/internal/testsupport/") {
			return
		}
		from := obj.Pkg()
		if raw[obj] || (from != nil && slices.ContainsFunc(databases, func(d string) bool { return from.Path() == d || strings.HasPrefix(from.Path(), d+"/") })) {
			t.Errorf("%s: %s reaches the database itself (%s): add a store method that names the query", c.fset.Position(id.Pos()), pkg, obj.Name())
		}
	})
	if checked < 40 {
		t.Fatalf("type-checked %d packages: the test sees too little of the module", checked)
	}
}

// checker type-checks packages from source against the compiler's export
// data of what they import (go list -export), so that a test can ask what
// each identifier of theirs is.
type checker struct {
	fset     *token.FileSet
	imp      types.Importer
	patterns []string
}

func newChecker(t *testing.T, patterns ...string) *checker {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		prereq.Missing(t, "packages are type-checked from go list -export: install Go")
	}
	statSources(t, "../..")
	exports := map[string]string{}
	for _, line := range goList(t, append([]string{"-deps", "-export", "-f", "{{.ImportPath}}\t{{.Export}}"}, patterns...)) {
		path, file, _ := strings.Cut(line, "\t")
		exports[path] = file
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) { return os.Open(exports[path]) })
	return &checker{fset: fset, imp: imp, patterns: patterns}
}

// load is the package at path, as the checked packages see it.
func (c *checker) load(t *testing.T, path string) *types.Package {
	t.Helper()
	p, err := c.imp.Import(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// eachUse calls fn with every identifier of the patterns' packages (their
// non-test files) and what it names; it returns how many packages it
// checked.
func (c *checker) eachUse(t *testing.T, fn func(pkg string, id *ast.Ident, obj types.Object)) int {
	t.Helper()
	checked := 0
	for _, line := range goList(t, append([]string{"-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \",\"}}"}, c.patterns...)) {
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) < 3 || parts[2] == "" {
			continue // tests only
		}
		var files []*ast.File
		for _, name := range strings.Split(parts[2], ",") {
			f, err := parser.ParseFile(c.fset, filepath.Join(parts[1], name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
		if _, err := (&types.Config{Importer: c.imp}).Check(parts[0], c.fset, files, info); err != nil {
			t.Fatalf("type-check %s: %v", parts[0], err)
		}
		for id, obj := range info.Uses {
			fn(parts[0], id, obj)
		}
		checked++
	}
	return checked
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
