package sweep

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/internal/gittest"
)

// The index git itself writes, in every version, reads back as the files
// git reports as tracked. (git makes the fixtures; xfsq never runs it.)
func TestTrackedFilesMatchesGit(t *testing.T) {
	for _, version := range []string{"2", "3", "4"} {
		t.Run("v"+version, func(t *testing.T) {
			dir := t.TempDir()
			gittest.Run(t, dir, "init", "-q")
			files := []string{"a.go", "dist/app.js", "dist/vendor/lib.js", "docs/a very long name with spaces.md", "z/y/x/w/deep.txt", "dist/app.js.map"}
			for _, f := range files {
				os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
				os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644)
			}
			os.WriteFile(filepath.Join(dir, "untracked.log"), nil, 0o644)
			gittest.Run(t, dir, "add", "--", "a.go", "dist", "docs", "z")
			if version == "3" {
				gittest.Run(t, dir, "add", "-N", "--", "untracked.log") // intent-to-add sets the extended flags
				files = append(files, "untracked.log")
			}
			gittest.Run(t, dir, "update-index", "--index-version", version)
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			got, err := TrackedFiles(root, ".")
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for n := range got {
				names = append(names, n)
			}
			sort.Strings(names)
			sort.Strings(files)
			if !reflect.DeepEqual(names, files) {
				t.Errorf("tracked %v, want %v", names, files)
			}
		})
	}
	root, _ := os.OpenRoot(t.TempDir())
	defer root.Close()
	if got, err := TrackedFiles(root, "."); err != nil || len(got) != 0 {
		t.Errorf("not a repository: %v, %v", got, err)
	}
}

// Any bytes either parse or are refused with an error — never a panic.
func FuzzParseIndex(f *testing.F) {
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x01"))
	f.Add([]byte("DIRC\x00\x00\x00\x04\x00\x00\x00\x02" + strings.Repeat("\x00", 62) + "\x00a\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, err := parseIndex(data, 20); err == nil && got == nil {
			t.Fatal("nil map without an error")
		}
	})
}
