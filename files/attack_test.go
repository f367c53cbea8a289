package files_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/internal/testsupport/tenanttest"
	"github.com/xfsq/xfsq/inventory"
)

// canaryAt is what an attack must leave as it is: a file and a directory
// beside the sandbox root, and a file of another project, each with its
// content, modification time and link count.
type canaryAt struct {
	paths map[string]unix.Stat_t
	data  map[string]string
}

func plantCanary(t *testing.T, root string) *canaryAt {
	t.Helper()
	parent := filepath.Dir(root)
	c := &canaryAt{paths: map[string]unix.Stat_t{}, data: map[string]string{}}
	for p, data := range map[string]string{
		filepath.Join(parent, "canary-file"):                  "CANARY-FILE",
		filepath.Join(parent, "canary-dir/inner/f"):           "CANARY-DIR",
		filepath.Join(root, "projects/other/inner/f"):         "OTHER-PROJECT",
		filepath.Join(root, "projects/other/inner/big-file"):  strings.Repeat("o", 10000),
		filepath.Join(parent, "canary-dir/inner/w"):           "CANARY-W",
		filepath.Join(root, "projects/other/inner/w"):         "OTHER-W",
		filepath.Join(parent, "canary-dir/inner/sub/deep"):    "CANARY-DEEP",
		filepath.Join(root, "projects/other/inner/sub/deep"):  "OTHER-DEEP",
		filepath.Join(parent, "canary-dir/inner/.keep-mtime"): "",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		c.data[p] = data
	}
	for p := range c.data {
		for d := p; d != parent && d != root; d = filepath.Dir(d) {
			var st unix.Stat_t
			if err := unix.Lstat(d, &st); err != nil {
				t.Fatal(err)
			}
			c.paths[d] = st
		}
	}
	return c
}

func (c *canaryAt) check(t *testing.T, after string) {
	t.Helper()
	for p, was := range c.paths {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatalf("after %s: %s: %v", after, p, err)
		}
		if st.Ino != was.Ino || st.Nlink != was.Nlink || st.Mtim != was.Mtim || st.Size != was.Size || st.Mode != was.Mode {
			t.Fatalf("after %s: %s changed (inode %d→%d, links %d→%d, mtime %v→%v, size %d→%d)",
				after, p, was.Ino, st.Ino, was.Nlink, st.Nlink, was.Mtim, st.Mtim, was.Size, st.Size)
		}
	}
	for p, data := range c.data {
		if b, err := os.ReadFile(p); err != nil || string(b) != data {
			t.Fatalf("after %s: %s holds %.40q (%v)", after, p, b, err)
		}
	}
}

// TestSwappedDirectoriesNeverLeadOutside: a tenant swaps a directory of
// its tree, atomically and over and over, with links that lead out of it
// (to a directory beside the root, to another project, to the root, to
// /), while every operation of the layer works on paths through it:
// write, read, list, remove (a file and a directory, recursively) and
// top. Nothing outside the tree is read, written or removed, no
// operation fails as an internal error, and a read gives only what the
// tree holds.
func TestSwappedDirectoriesNeverLeadOutside(t *testing.T) {
	base, err := os.MkdirTemp("/var/tmp", "h1-files-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	root := filepath.Join(base, "root")
	os.Mkdir(root, 0o755)
	s := newSandboxAt(t, root, filepath.Join(base, "db"), "omni", "other")
	canary := plantCanary(t, root)
	tree := filepath.Join(root, "projects/omni")
	targets := []string{
		filepath.Join(base, "canary-dir"), // absolute, beside the root
		"../other",                        // relative, into another project
		"../../projects/other",            // through the root
		root + "/projects/other",          // absolute, into another project
		"/",
	}
	for i, target := range targets {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			real := filepath.Join(tree, "d")
			os.RemoveAll(real)
			os.RemoveAll(filepath.Join(tree, "d-link"))
			if err := os.MkdirAll(filepath.Join(real, "inner/sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(real, "inner/f"), []byte("TENANT"), 0o644)
			if err := os.Symlink(target, filepath.Join(tree, "d-link")); err != nil {
				t.Fatal(err)
			}
			stop := tenanttest.Loop(t, func() {
				unix.Renameat2(unix.AT_FDCWD, real, unix.AT_FDCWD, filepath.Join(tree, "d-link"), unix.RENAME_EXCHANGE)
			})
			internal, ok, refused := 0, 0, 0
			for i := range 240 {
				var err error
				what := ""
				switch i % 8 {
				case 0:
					what = "put d/inner/w"
					_, err = s.l.Put(ctx, "omni", "", "d/inner/w", strings.NewReader("pwned"), 5)
				case 1:
					what = "put d/inner/new/file"
					_, err = s.l.Put(ctx, "omni", "", "d/inner/new/file", strings.NewReader("pwned"), 5)
				case 2:
					what = "get d/inner/f"
					var buf bytes.Buffer
					_, err = s.l.Get(ctx, "omni", "", "d/inner/f", &buf)
					if err == nil && buf.String() != "TENANT" {
						t.Fatalf("get d/inner/f through a swapped link read %q", buf.String())
					}
				case 3:
					what = "list d/inner"
					var es []files.Entry
					es, err = s.l.List(ctx, "omni", "", "d/inner")
					for _, e := range es {
						if e.Name == "big-file" || e.Name == ".keep-mtime" {
							t.Fatalf("list d/inner through a swapped link listed %s", e.Name)
						}
					}
				case 4:
					what = "rm d/inner/w"
					_, err = s.l.Remove(ctx, "omni", "", "d/inner/w")
				case 5:
					what = "rm -r d/inner/sub"
					_, err = s.l.Remove(ctx, "omni", "", "d/inner/sub", files.RemoveOptions{Recursive: true})
					os.MkdirAll(filepath.Join(real, "inner/sub"), 0o755)
				case 6:
					what = "top d"
					var res files.TopResult
					res, err = s.l.Top(ctx, "omni", "", "d", inventory.Options{Depth: 2, TopK: 5}, nil)
					for _, f := range res.TopFiles {
						if strings.Contains(f.Path, "big-file") {
							t.Fatalf("top d through a swapped link saw %s", f.Path)
						}
					}
				case 7:
					what = "get d/inner/big-file"
					_, err = s.l.Get(ctx, "omni", "", "d/inner/big-file", io.Discard)
					if err == nil {
						t.Fatal("get d/inner/big-file read another project's file through a swapped link")
					}
				}
				if err == nil {
					ok++
				} else {
					refused++
				}
				if err != nil && errkind.Of(err) == errkind.Internal {
					internal++
					t.Errorf("%s amid swaps: an internal error: %v", what, err)
				}
				canary.check(t, what)
			}
			stop()
			canary.check(t, "the swaps")
			// Both sides of the swap must have been met, or the case tests nothing.
			if ok == 0 || refused == 0 {
				t.Errorf("%d operations succeeded, %d were refused: the swap was not met both ways", ok, refused)
			}
			t.Logf("%d succeeded, %d refused, %d internal errors", ok, refused, internal)
		})
	}
}

// TestATreeDeeperThanAPathCanNameIsRemovedAndMeasured: a tenant nests
// directories until their path is longer than PATH_MAX (4096 bytes), with
// a file at the bottom. Top measures all of it, and a recursive removal
// removes all of it (a walk by path would stop at ENAMETOOLONG and leave
// it, or fail as an internal error). Deeper than saferm.MaxDepth levels
// the rest is left in place and said so, a conflict; nothing outside the
// tree is touched either way.
func TestATreeDeeperThanAPathCanNameIsRemovedAndMeasured(t *testing.T) {
	base, err := os.MkdirTemp("/var/tmp", "h1-deep-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	root := filepath.Join(base, "root")
	os.Mkdir(root, 0o755)
	s := newSandboxAt(t, root, filepath.Join(base, "db"), "omni", "other")
	canary := plantCanary(t, root)
	tree := filepath.Join(root, "projects/omni")
	const name = "a-directory-nested-deep" // 24 bytes a level with its slash
	nest := func(top string, depth int) {
		fd, err := unix.Open(tree, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range depth {
			n := name
			if i == 0 {
				n = top
			}
			if err := unix.Mkdirat(fd, n, 0o755); err != nil {
				t.Fatal(err)
			}
			next, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY, 0)
			unix.Close(fd)
			if err != nil {
				t.Fatal(err)
			}
			fd = next
		}
		bottom, err := unix.Openat(fd, "bottom", unix.O_WRONLY|unix.O_CREAT, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		unix.Write(bottom, bytes.Repeat([]byte("b"), 1<<20))
		unix.Close(bottom)
		unix.Close(fd)
	}
	const depth = 500 // 12000 bytes of path, within saferm.MaxDepth
	nest("deep", depth)
	top, err := s.l.Top(ctx, "omni", "", ".", inventory.Options{Depth: 1, TopK: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if top.Root.SizeBytes < 1<<20+depth*4096 || top.Root.Dirs < depth {
		t.Errorf("top of the deep tree: %d bytes in %d directories; it holds over %d bytes in %d", top.Root.SizeBytes, top.Root.Dirs, 1<<20+depth*4096, depth)
	}
	res, err := s.l.Remove(ctx, "omni", "", "deep", files.RemoveOptions{Recursive: true})
	if err != nil {
		t.Fatalf("rm -r of the deep tree: %.300v (kind %s)", err, errkind.Of(err))
	}
	if res.Entries != depth+1 || res.Files != depth+1 {
		t.Errorf("rm -r of the deep tree: %+v; want %d entries", res, depth+1)
	}
	if _, err := os.Lstat(filepath.Join(tree, "deep")); err == nil {
		t.Error("the deep tree is still there")
	}
	canary.check(t, "rm -r of the deep tree")

	nest("deeper", 600)
	res, err = s.l.Remove(ctx, "omni", "", "deeper", files.RemoveOptions{Recursive: true})
	var left *files.LeftError
	if !errors.As(err, &left) || len(res.Left) != 1 || !strings.Contains(res.Left[0].Reason, "levels deep") {
		t.Errorf("rm -r of a tree deeper than saferm.MaxDepth: %.300v, left %d; want the rest left, said so", err, len(res.Left))
	}
	canary.check(t, "rm -r of the deeper tree")
}
