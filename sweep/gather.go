package sweep

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"
	"time"

	"github.com/xfsq/xfsq/inventory"
)

// Gatherer walks trees for the planner. It only reads; a path that changes
// while it looks can only be mis-measured, never deleted (the executor
// re-checks everything through os.Root).
type Gatherer struct {
	Root    string   // the sandbox root, absolute
	RootDev uint64   // its filesystem: nothing elsewhere is offered
	Globs   []string // workspace trash globs
}

// workspaceProtected are top-level workspace directories never swept,
// never even walked.
var workspaceProtected = map[string]bool{"uploads": true, "inbox": true}

// Why an entry is never offered or deleted, whatever the policy, as the
// walks find it.
const (
	protectedSymlink = "symlink"
	protectedOtherFS = "other filesystem"
)

func (g *Gatherer) measure(rel string, fi os.FileInfo) (Entry, error) {
	return measure(g.Root, g.RootDev, rel, fi)
}

// measure gives the entry at rel under the sandbox root rootDir (lstat as
// fi): its allocated bytes and newest mtime (inside it, for a directory),
// or why it must stay (a symlink, another filesystem than rootDev). The
// planner's walks and the executor's re-check both see entries through it.
func measure(rootDir string, rootDev uint64, rel string, fi os.FileInfo) (Entry, error) {
	e := Entry{Path: rel, Dir: fi.IsDir(), Newest: fi.ModTime().UTC()}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if st != nil { // an mtime stamped in the future must not pin the entry (inventory.Mtime)
		e.Newest = time.Unix(0, min(st.Mtim.Nano(), st.Ctim.Nano())).UTC()
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		e.Protected = protectedSymlink
		return e, nil
	case st != nil && st.Dev != rootDev:
		e.Protected = protectedOtherFS
		return e, nil
	case fi.IsDir():
		res, err := inventory.Walk(filepath.Join(rootDir, rel), inventory.Options{Depth: 1, TopK: 1})
		if err != nil {
			return e, err
		}
		e.Bytes, e.Newest = res.Root.SizeBytes, res.Root.Mtime
	case st != nil:
		e.Bytes = uint64(st.Blocks) * 512
	}
	return e, nil
}

// TopLevel offers every entry directly under a tree (cache entries,
// scratch runs), with the tree's total.
func (g *Gatherer) TopLevel(area, treeRel string) (Tree, error) {
	t := Tree{Area: area, Path: treeRel}
	dir := filepath.Join(g.Root, treeRel)
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return t, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		t.Bytes = uint64(st.Blocks) * 512
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return t, err
	}
	for _, de := range entries {
		fi, err := de.Info()
		if err != nil {
			continue // vanished
		}
		e, err := g.measure(path.Join(treeRel, de.Name()), fi)
		if err != nil {
			continue
		}
		if area == AreaScratch {
			e.Run = de.Name()
		}
		t.Bytes += e.Bytes
		t.Entries = append(t.Entries, e)
	}
	return t, nil
}

// Workspace offers the workspace entries that trash globs name. A trash
// directory holding git-tracked files is not offered whole: its files are,
// the tracked ones marked so.
func (g *Gatherer) Workspace(treeRel string) (Tree, error) {
	t := Tree{Area: AreaWorkspace, Path: treeRel}
	root, err := os.OpenRoot(filepath.Join(g.Root, treeRel))
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return t, err
	}
	defer root.Close()
	tracked, err := TrackedFiles(root, ".")
	if err != nil {
		return t, err
	}
	trackedDirs := map[string]bool{}
	for p := range tracked {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			trackedDirs[d] = true
		}
	}
	var walk func(rel string, inTrash bool) error
	walk = func(rel string, inTrash bool) error {
		entries, err := os.ReadDir(filepath.Join(g.Root, treeRel, rel))
		if err != nil {
			return nil // unreadable or vanished: nothing to offer from it
		}
		for _, de := range entries {
			name := de.Name()
			sub := path.Join(rel, name)
			if rel == "." {
				sub = name
			}
			if name == ".git" {
				continue
			}
			if rel == "." && workspaceProtected[name] {
				continue
			}
			fi, err := de.Info()
			if err != nil {
				continue
			}
			isDir := fi.IsDir()
			trash := inTrash || MatchGlob(g.Globs, sub, isDir) != ""
			switch {
			case isDir && trash && !trackedDirs[sub]:
				if e, err := g.measure(path.Join(treeRel, sub), fi); err == nil {
					t.Entries = append(t.Entries, e)
				}
			case isDir:
				if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Dev != g.RootDev {
					continue // another filesystem: not ours to walk
				}
				if err := walk(sub, trash); err != nil {
					return err
				}
			case trash:
				e, err := g.measure(path.Join(treeRel, sub), fi)
				if err != nil {
					continue
				}
				if tracked[sub] && e.Protected == "" {
					e.Protected = "git-tracked"
				}
				t.Entries = append(t.Entries, e)
			}
		}
		return nil
	}
	return t, walk(".", false)
}
