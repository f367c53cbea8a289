package sweep

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"time"

	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/inventory"
)

// Gatherer walks trees for the planner. It only reads; a path that changes
// while it looks can only be mis-measured, never deleted (the executor
// re-checks everything through descriptors).
type Gatherer struct {
	// Root is the sandbox root. Each tree is opened beneath it without
	// links: a tree root that is a symlink (to another project's tree, say)
	// is refused, never walked.
	Root  *saferm.Dir
	Globs []string // workspace trash globs
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

// TreeRefusedError is a tree root that is not a real directory reached
// without links from the sandbox root.
type TreeRefusedError struct {
	Tree string
	Err  error
}

func (e *TreeRefusedError) Error() string {
	return "tree " + e.Tree + " is not a real directory reached without links (a symlink or a mount?); it is not swept: " + e.Err.Error()
}
func (e *TreeRefusedError) Unwrap() error { return e.Err }

// openTree opens a tree beneath the root; a tree that does not exist is
// nil without an error.
func (g *Gatherer) openTree(treeRel string) (*saferm.Dir, error) {
	d, err := g.Root.OpenDir(treeRel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, saferm.ErrUnsafe):
		return nil, &TreeRefusedError{treeRel, err}
	}
	return d, err
}

// measure gives the entry rel beneath dir (never followed): its allocated
// bytes and newest mtime (inside it, for a directory), or why it must stay
// (a symlink, a mount point or another mount). The planner's walks and the
// executor's re-check both see entries through it. Entry.Path is relative
// to the sandbox root.
func measure(dir *saferm.Dir, rel string) (Entry, error) {
	st, err := dir.Lstat(rel)
	if err != nil {
		return Entry{}, err
	}
	e := Entry{Path: path.Join(dir.Path(), rel), Dir: st.IsDir(), Newest: time.Unix(st.Mtime.Sec, int64(st.Mtime.Nsec)).UTC()}
	switch {
	case st.IsSymlink():
		e.Protected = protectedSymlink
	case st.OtherMount:
		e.Protected = protectedOtherFS
	case st.IsDir():
		// Through the held descriptor: the walk starts in dir, whatever
		// has been renamed above it.
		res, err := inventory.Walk(fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), rel), inventory.Options{Depth: 1, TopK: 1})
		if err != nil {
			return e, err
		}
		e.Bytes, e.Newest = res.Root.SizeBytes, res.Root.Mtime
	default:
		e.Bytes = st.Blocks * 512
	}
	return e, nil
}

// TopLevel offers every entry directly under a tree (cache entries,
// scratch runs), with the tree's total.
func (g *Gatherer) TopLevel(area, treeRel string) (Tree, error) {
	t := Tree{Area: area, Path: treeRel}
	tree, err := g.openTree(treeRel)
	if tree == nil || err != nil {
		return t, err
	}
	defer tree.Close()
	st, err := tree.Lstat(".")
	if err == nil {
		t.Bytes = st.Blocks * 512
	}
	names, err := tree.Names()
	sort.Strings(names)
	if err != nil {
		return t, err
	}
	for _, name := range names {
		e, err := measure(tree, name)
		if err != nil {
			continue // vanished or unreadable
		}
		if area == AreaScratch {
			e.Run = name
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
	tree, err := g.openTree(treeRel)
	if tree == nil || err != nil {
		return t, err
	}
	defer tree.Close()
	// The held descriptor pins the tree; /proc/self/fd resolves to it alone.
	root, err := os.OpenRoot(fmt.Sprintf("/proc/self/fd/%d", tree.Fd()))
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
	// Every directory is entered through its parent's descriptor, never
	// through a link or into another mount.
	var walk func(dir *saferm.Dir, rel string, inTrash bool) error
	walk = func(dir *saferm.Dir, rel string, inTrash bool) error {
		names, err := dir.Names()
		if err != nil {
			return nil // unreadable or vanished: nothing to offer from it
		}
		sort.Strings(names)
		for _, name := range names {
			sub := path.Join(rel, name)
			if name == ".git" {
				continue
			}
			if rel == "." && workspaceProtected[name] {
				continue
			}
			st, err := dir.Lstat(name)
			if err != nil {
				continue
			}
			isDir := st.IsDir()
			trash := inTrash || MatchGlob(g.Globs, sub, isDir) != ""
			switch {
			case isDir && trash && !trackedDirs[sub]:
				if e, err := measure(dir, name); err == nil {
					t.Entries = append(t.Entries, e)
				}
			case isDir:
				if st.OtherMount {
					continue // another mount: not ours to walk
				}
				d, err := dir.OpenDir(name)
				if err != nil {
					continue // swapped for a link or gone meanwhile
				}
				err = walk(d, sub, trash)
				d.Close()
				if err != nil {
					return err
				}
			case trash:
				e, err := measure(dir, name)
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
	return t, walk(tree, ".", false)
}
