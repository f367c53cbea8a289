package files

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// onFirstRead runs fn when the body is first read, then serves data.
type onFirstRead struct {
	fn   func()
	r    io.Reader
	done bool
}

func (o *onFirstRead) Read(p []byte) (int, error) {
	if !o.done {
		o.done = true
		o.fn()
	}
	return o.r.Read(p)
}

// A tenant that swaps xfsq's temporary file for a symlink out of the tree,
// at any moment of a write, never gets the link placed at the target and
// never gets a success for data that is not there: either the write lands
// (the new content, as a regular file) or it fails and the old content (or
// nothing) stays. Both with O_TMPFILE and on the named-temporary path of
// filesystems without it; for new files and replacements; swapping while the
// body streams, after the temporary name is given, and after it is checked.
func TestPutTempSwappedForSymlink(t *testing.T) {
	for _, tmpfile := range []bool{true, false} {
		for _, point := range []string{"body", "put:named", "put:verified"} {
			for _, replace := range []bool{false, true} {
				name := map[bool]string{true: "tmpfile", false: "named"}[tmpfile] + "/" + point + "/" +
					map[bool]string{true: "replace", false: "new"}[replace]
				t.Run(name, func(t *testing.T) {
					noTmpfile = !tmpfile
					defer func() { noTmpfile = false }()
					s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "omni")
					tree := filepath.Join(s.root, "projects/omni")
					outside := filepath.Join(t.TempDir(), "outside")
					os.WriteFile(outside, []byte("outside"), 0o644)
					target := filepath.Join(tree, "doc")
					if replace {
						os.WriteFile(target, []byte("old"), 0o644)
					}
					swapped := false
					swap := func() {
						entries, _ := os.ReadDir(tree)
						for _, e := range entries {
							if strings.HasPrefix(e.Name(), tempPrefix) {
								tmp := filepath.Join(tree, e.Name())
								os.Rename(tmp, filepath.Join(tree, "stolen"))
								os.Symlink(outside, tmp)
								swapped = true
							}
						}
					}
					var body io.Reader = bytes.NewReader([]byte("new data"))
					if point == "body" {
						body = &onFirstRead{fn: swap, r: body}
					} else {
						raceHook = func(p string) {
							if p == point {
								swap()
							}
						}
						defer func() { raceHook = nil }()
					}
					_, err := s.l.Put(ctx, "omni", "", "doc", body, 8)
					fi, lerr := os.Lstat(target)
					switch {
					case lerr == nil && fi.Mode()&os.ModeSymlink != 0:
						t.Fatalf("the target became a symlink (put returned %v)", err)
					case err == nil && string(s.content("omni", "doc")) != "new data":
						t.Errorf("put reported success, the target holds %q", s.content("omni", "doc"))
					case err != nil && replace && string(s.content("omni", "doc")) != "old":
						t.Errorf("a failed put (%v) changed the old content to %q", err, s.content("omni", "doc"))
					case err != nil && !replace && lerr == nil:
						t.Errorf("a failed put (%v) left a target behind", err)
					}
					if swapped && err == nil && point != "body" {
						t.Errorf("the swap at %s went unnoticed", point)
					}
					if got, _ := os.ReadFile(outside); string(got) != "outside" {
						t.Errorf("the file outside the tree became %q", got)
					}
					if res, _ := s.st.Reservations(ctx); len(res) != 0 {
						t.Errorf("reservations left: %+v", res)
					}
				})
			}
		}
	}
}
