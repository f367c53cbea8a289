package files_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/quota/fallback"
)

// A tenant racing its own write at the instant of the exchange — taking
// xfsq's new file off the target and making its own entry there (a file,
// a directory), or making a directory at the target just before the
// exchange — keeps what it made where it can see it: never moved onto
// xfsq's temporary name (where a directory is hidden from the file API
// and a file is removed by doctor --fix as a stray), never removed. The
// file the write replaced is never lost by a write that did not land, the
// reply says the write did not land when the target does not hold it,
// and the ledger never counts less than the tree holds. (An undo of the
// exchange after it had succeeded moved the tenant's entry at the target
// onto the temporary name.)
func TestATenantsEntryAtTheTargetAroundTheExchangeStaysVisible(t *testing.T) {
	type act struct{ point, what string }
	cases := map[string][]act{
		"file-at-target-after-exchange":      {{"put:exchanged", "file"}},
		"directory-at-target-after-exchange": {{"put:exchanged", "dir"}},
		"directory-before-then-file-after":   {{"put:verified", "dir"}, {"put:exchanged", "file"}},
		"directory-at-target-before":         {{"put:verified", "dir"}},
		"file-at-target-before":              {{"put:verified", "file"}},
	}
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		for _, tmpfile := range []bool{true, false} {
			for name, acts := range cases {
				t.Run(map[bool]string{true: "tmpfile", false: "named"}[tmpfile]+"/"+name, func(t *testing.T) {
					*files.NoTmpfile = !tmpfile
					defer func() { *files.NoTmpfile = false }()
					s := newSandbox(t, dsn, "omni")
					tree := filepath.Join(s.root, "projects/omni")
					doc := filepath.Join(tree, "doc")
					os.WriteFile(doc, []byte("old"), 0o644)
					s.walkBaseline("omni")
					// What the tenant makes, by inode: its own, outside xfsq.
					type ino struct{ dev, ino uint64 }
					tenants := map[ino]bool{}
					mark := func(p string) {
						var st unix.Stat_t
						if err := unix.Lstat(p, &st); err != nil {
							t.Fatal(err)
						}
						tenants[ino{st.Dev, st.Ino}] = true
					}
					fired := 0
					*files.RaceHook = func(point string) {
						for i, a := range acts {
							if a.point != point {
								continue
							}
							if err := os.Rename(doc, filepath.Join(tree, "moved"+string(rune('0'+i)))); err != nil {
								t.Fatalf("the tenant's move at %s: %v", point, err)
							}
							switch a.what {
							case "file":
								os.WriteFile(doc, []byte("planted"), 0o644)
								mark(doc)
							case "dir":
								os.MkdirAll(filepath.Join(doc, "work"), 0o755)
								os.WriteFile(filepath.Join(doc, "work", "thesis"), []byte("years"), 0o644)
								mark(doc)
								mark(filepath.Join(doc, "work"))
								mark(filepath.Join(doc, "work", "thesis"))
							}
							fired++
						}
					}
					defer func() { *files.RaceHook = nil }()
					_, err := s.l.Put(ctx, "omni", "", "doc", bytes.NewReader([]byte("new data")), 8)
					*files.RaceHook = nil
					if fired != len(acts) {
						t.Fatalf("the tenant acted %d times of %d (put: %v): the case tests nothing", fired, len(acts), err)
					}
					holding := map[string][]string{}
					var atTemp []string
					walk, werr := fallback.Walk(tree)
					if werr != nil {
						t.Fatal(werr)
					}
					filepath.WalkDir(tree, func(p string, d os.DirEntry, _ error) error {
						if d == nil || p == tree {
							return nil
						}
						rel := strings.TrimPrefix(p, tree+"/")
						if strings.Contains("/"+rel, "/"+files.TempPrefix) {
							atTemp = append(atTemp, rel)
						}
						var st unix.Stat_t
						unix.Lstat(p, &st)
						if tenants[ino{st.Dev, st.Ino}] {
							walk.Bytes -= uint64(st.Blocks) * 512
							walk.Inodes--
						}
						if d.Type().IsRegular() {
							data, _ := os.ReadFile(p)
							holding[string(data)] = append(holding[string(data)], rel)
						}
						return nil
					})
					if len(atTemp) > 0 {
						t.Errorf("left at xfsq's temporary names (hidden from the file API; a file there is removed by doctor --fix): %v (put: %v; the tree holds %v)", atTemp, err, holding)
					}
					for _, want := range []string{"planted", "years"} {
						made := false
						for _, a := range acts {
							made = made || (want == "planted") == (a.what == "file")
						}
						if made && len(holding[want]) == 0 {
							t.Errorf("the tenant's %q is gone (put: %v; the tree holds %v)", want, err, holding)
						}
					}
					landed := string(s.content("omni", "doc")) == "new data"
					switch {
					case err == nil && !landed:
						t.Errorf("put reported success, the target holds %q (the tree holds %v)", s.content("omni", "doc"), holding)
					case err != nil && errkind.Of(err) != errkind.Conflict && !strings.Contains(err.Error(), "it is a directory"):
						t.Errorf("the failure is %s, not a conflict to retry: %v", errkind.Of(err), err)
					case err != nil && len(holding["new data"]) > 0 && strings.Contains(err.Error(), "nothing was written"):
						t.Errorf("put says %q while the body is in the tree at %v", err, holding["new data"])
					case err != nil && len(holding["old"]) == 0:
						t.Errorf("a write that did not land (%v) lost the file it was to replace (the tree holds %v)", err, holding)
					}
					if used := s.used("omni"); used.Bytes < walk.Bytes || used.Inodes < walk.Inodes {
						t.Errorf("the ledger counts %+v, below the %+v not made by the tenant (put: %v; the tree holds %v)", used, walk, err, holding)
					}
					if res, _ := s.st.Reservations(ctx); len(res) != 0 {
						t.Errorf("reservations left: %+v", res)
					}
				})
			}
		}
	})
}
