package inventory

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/treetest"
)

// What deleting an entry frees: a file linked from outside it stays, so it
// is in the du count but not in what is freed; links all inside are freed
// once.
func TestMeasureFreed(t *testing.T) {
	const size = 1 << 20
	for _, c := range []struct {
		name       string
		make       func(t *testing.T, base string) // under base: the entry "e" and whatever else
		freedBytes bool                            // the 1 MiB file's bytes are freed
		freedFiles uint64                          // inodes freed
	}{
		{"a file alone in a directory", func(t *testing.T, base string) {
			treetest.Write(t, filepath.Join(base, "e", "f"), size)
		}, true, 2},
		{"a directory holding a link to a file that stays", func(t *testing.T, base string) {
			treetest.Write(t, filepath.Join(base, "keep"), size)
			link(t, filepath.Join(base, "keep"), filepath.Join(base, "e", "f"))
		}, false, 1},
		{"a directory holding every link of a file", func(t *testing.T, base string) {
			treetest.Write(t, filepath.Join(base, "e", "f"), size)
			link(t, filepath.Join(base, "e", "f"), filepath.Join(base, "e", "sub", "g"))
		}, true, 3},
		{"a file with a second link", func(t *testing.T, base string) {
			treetest.Write(t, filepath.Join(base, "e"), size)
			link(t, filepath.Join(base, "e"), filepath.Join(base, "other"))
		}, false, 0},
		{"a file alone", func(t *testing.T, base string) {
			treetest.Write(t, filepath.Join(base, "e"), size)
		}, true, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			c.make(t, base)
			u, err := Measure(filepath.Join(base, "e"))
			if err != nil {
				t.Fatal(err)
			}
			if u.Bytes < size {
				t.Errorf("du count %d bytes, want at least the file's %d", u.Bytes, size)
			}
			if got := u.FreeBytes >= size; got != c.freedBytes {
				t.Errorf("freed %d of %d bytes; want the file's freed: %v", u.FreeBytes, u.Bytes, c.freedBytes)
			}
			if u.FreeInodes != c.freedFiles {
				t.Errorf("freed %d inodes, want %d", u.FreeInodes, c.freedFiles)
			}
			if fi, err := os.Lstat(filepath.Join(base, "e")); err == nil && fi.IsDir() {
				f, err := os.Open(filepath.Join(base, "e"))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				// Settled is the walks' own: a tree made within a tick of the
				// kernel's ctime clock before a walk reads as changed under
				// it, which one walk may see and the next not.
				v, err := MeasureFile(f)
				v.Settled = u.Settled
				if err != nil || v != u {
					t.Errorf("MeasureFile = %+v, %v; Measure = %+v", v, err, u)
				}
			}
		})
	}
}

func link(t *testing.T, from, to string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(to), 0o755)
	if err := os.Link(from, to); err != nil {
		t.Fatal(err)
	}
}

// MeasureDir is how a tree's root is measured: a directory, settled when
// nothing moved under the walk; a file or a symlink in its place is refused,
// never measured as the tree.
func TestMeasureDirRefusesWhatIsNotADirectory(t *testing.T) {
	dir := t.TempDir()
	tree := filepath.Join(dir, "tree")
	if err := os.MkdirAll(filepath.Join(tree, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "sub", "f"), make([]byte, 10000), 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory changed within a tick of the walk's start counts as
	// changed under it (Result.Changed): wait that out.
	time.Sleep(2 * coarseTick)
	u, err := MeasureDir(tree)
	if err != nil || !u.Settled || u.Inodes != 3 || u.Bytes < 10000 {
		t.Errorf("a tree: %+v %v, want settled, 3 inodes, the file's bytes", u, err)
	}
	os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644)
	os.Symlink(tree, filepath.Join(dir, "link"))
	for _, name := range []string{"file", "link"} {
		if _, err := MeasureDir(filepath.Join(dir, name)); err == nil {
			t.Errorf("MeasureDir of a %s measured it", name)
		}
	}
}

// A write in progress named in Options.Writing is left to its reservation:
// its inode at the root, of one link, no larger than its room. Any other
// entry of that name (a tenant's file renamed onto it above all) counts as
// every entry does.
func TestAWriteInProgressIsLeftOut(t *testing.T) {
	const size = 64 << 10
	for _, c := range []struct {
		name    string
		make    func(t *testing.T, root string) // the entry "w" and whatever else
		room    uint64
		counted bool
		swap    bool // another file renamed onto "w" after its inode was taken
	}{
		{"a body within its room", func(t *testing.T, root string) { treetest.Write(t, filepath.Join(root, "w"), size) }, 1 << 20, false, false},
		{"a body larger than its room", func(t *testing.T, root string) { treetest.Write(t, filepath.Join(root, "w"), size) }, 4096, true, false},
		{"a body linked elsewhere too", func(t *testing.T, root string) {
			treetest.Write(t, filepath.Join(root, "w"), size)
			link(t, filepath.Join(root, "w"), filepath.Join(root, "d", "kept"))
		}, 1 << 20, true, false},
		{"the name below the root", func(t *testing.T, root string) { treetest.Write(t, filepath.Join(root, "d", "w"), size) }, 1 << 20, true, false},
		{"a directory of the name", func(t *testing.T, root string) { treetest.Write(t, filepath.Join(root, "w", "f"), size) }, 1 << 20, true, false},
		{"another file renamed onto the name", func(t *testing.T, root string) {
			treetest.Write(t, filepath.Join(root, "w"), size)
			treetest.Write(t, filepath.Join(root, "d", "tenant"), size)
		}, 1 << 20, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			os.Mkdir(filepath.Join(root, "d"), 0o755)
			c.make(t, root)
			var st syscall.Stat_t
			syscall.Lstat(filepath.Join(root, "w"), &st)
			if c.swap {
				if err := os.Rename(filepath.Join(root, "d", "tenant"), filepath.Join(root, "w")); err != nil {
					t.Fatal(err)
				}
			}
			measure := func(writing map[string]InProgress) Usage {
				f, err := os.Open(root) // a walk reads its directory to the end
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				u, err := MeasureWriting(f, writing)
				if err != nil {
					t.Fatal(err)
				}
				return u
			}
			all, left := measure(nil), measure(map[string]InProgress{"w": {Ino: st.Ino, Room: c.room}})
			if counted := left.Bytes == all.Bytes && left.Inodes == all.Inodes; counted != c.counted {
				t.Errorf("with the write named: %+v, without: %+v; want it counted: %v", left, all, c.counted)
			}
			if !c.counted && (all.Bytes-left.Bytes < size || all.Inodes-left.Inodes != 1) {
				t.Errorf("left out %d bytes and %d inodes, want the body's %d bytes and its inode", all.Bytes-left.Bytes, all.Inodes-left.Inodes, size)
			}
		})
	}
}
