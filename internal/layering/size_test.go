package layering

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// maxPackageLines is how long a package may grow, in lines of its non-test
// Go files: past it, a package holds more than one reader can keep in mind
// and is split (issue #34: "no package over ~3,000 lines").
const maxPackageLines = 3000

func TestNoPackageOverMaxLines(t *testing.T) {
	lines := packageLines(t, "../..")
	if len(lines) < 10 || lines["store"] == 0 {
		t.Fatalf("counted %d packages (store: %d lines): the test sees nothing", len(lines), lines["store"])
	}
	var over []string
	for pkg, n := range lines {
		if n > maxPackageLines {
			over = append(over, pkg+" ("+strconv.Itoa(n)+" lines)")
		}
	}
	sort.Strings(over)
	if len(over) > 0 {
		t.Errorf("packages over %d lines of non-test Go, to split: %s", maxPackageLines, strings.Join(over, ", "))
	}
}

// packageLines counts the lines of each package's non-test Go files,
// keyed by the package's directory relative to root.
func packageLines(t *testing.T, root string) map[string]int {
	t.Helper()
	out := map[string]int{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] += bytes.Count(b, []byte("\n"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
