package treewalk

import (
	"errors"
	"fmt"
	"os"
	"path"

	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store"
)

// openForWalk opens t's directory as the root's own filesystem holds it,
// for a walk whose figure admission or the inventory will trust. A tenant
// who may mount (a FUSE mount, a tmpfs where its container's mounts reach
// the host) can cover part of its tree, or all of it: walked through the
// mounts, what it wrote beneath would go uncounted, and once unmounted it
// would look counted, so removing or overwriting it would credit blocks
// nothing had counted. Where the process may copy the root's mount without
// its submounts (saferm.Beneath: CAP_SYS_ADMIN), the walk goes through the
// copy and sees beneath every mount. Elsewhere it goes through the mounts
// as they are and counts the mount points it met (Result.MountPoints),
// which make its figure a floor that credits nothing (store.WalkSeen);
// a tree whose own directory is covered cannot be walked at all.
func (m *Walker) openForWalk(t store.Tree, rel string) (*walkDir, error) {
	root, err := m.openWalkRoot()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return m.openIn(root, t, rel)
}

// walkRoot is the root opened for walks (openWalkRoot): in Beneath's copy
// of its mount when cloned.
type walkRoot struct {
	*saferm.Dir
	cloned bool
}

// openWalkRoot opens the root for openIn: in a copy of its mount without
// its submounts where the process may make one. A snapshot pass opens one
// for many trees: a copy is made and dissolved once, not once a tree (its
// dissolving waited on the kernel for ~1 ms a tree), and a mount made on
// the original after the copy never appears in it
// (saferm.TestBeneathCopyHeldWhileItsDirsAreOpen).
func (m *Walker) openWalkRoot() (walkRoot, error) {
	root, err := beneath(m.Root)
	cloned := err == nil
	if errors.Is(err, saferm.ErrCannotClone) {
		root, err = saferm.Open(m.Root)
	}
	if err != nil {
		return walkRoot{}, err
	}
	return walkRoot{Dir: root, cloned: cloned}, nil
}

// openIn is openForWalk in a root already open; safe to call at once from
// several goroutines.
func (m *Walker) openIn(root walkRoot, t store.Tree, rel string) (*walkDir, error) {
	at := path.Join(t.Path, rel)
	cloned := root.cloned
	dir, err := root.OpenDir(at)
	if errors.Is(err, saferm.ErrOtherMount) && !cloned {
		return nil, fmt.Errorf("walk %s: %w (xfsq can look beneath a mount only with CAP_SYS_ADMIN: unmount it, or run xfsq as root)", m.Root, err)
	}
	if err != nil {
		// Looked at where the walk looked (the copy, if any), never through
		// the path: a tenant's mount there may never answer.
		if st, lerr := root.Lstat(at); lerr == nil && st.IsSymlink() {
			return nil, &os.PathError{Op: "walk", Path: m.abs(at), Err: errWalkSymlink{}}
		}
		return nil, fmt.Errorf("walk %s: %w", m.Root, err)
	}
	f, err := dir.File()
	if err != nil {
		dir.Close()
		return nil, err
	}
	return &walkDir{File: f, dir: dir}, nil
}

// walkDir is a tree's directory open for a walk, and the Dir it was opened
// from, held open as long as the walk reads: closing the last Dir of
// Beneath's copy dissolves it, and a walk through a dissolved copy pays a
// global lock at every stat (saferm's heldCopy).
type walkDir struct {
	*os.File
	dir *saferm.Dir
}

func (w *walkDir) Close() error {
	err := w.File.Close()
	w.dir.Close()
	return err
}

// errWalkSymlink is a walk refused for a symlink where a directory was
// named: one of saferm's refusals (ErrUnsafe, which callers classify as
// bad input), said more plainly.
type errWalkSymlink struct{}

func (errWalkSymlink) Error() string { return "is a symlink: walks never follow one" }
func (errWalkSymlink) Unwrap() error { return saferm.ErrUnsafe }

// walkTree walks t's directory (openForWalk).
func (m *Walker) walkTree(t store.Tree, opts inventory.Options) (*inventory.Result, error) {
	return m.WalkIn(t, ".", opts)
}

// WalkIn walks the directory rel inside the tree t (a path its caller has
// checked, as the file layer does for top PROJECT PATH) as walkTree walks
// a whole tree: beneath the tenant's mounts, through no symlink, so that
// a bind mount of another tenant's tree, or of anything outside the root,
// shows none of its names. Nothing is recorded.
func (m *Walker) WalkIn(t store.Tree, rel string, opts inventory.Options) (*inventory.Result, error) {
	f, err := m.openForWalk(t, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return inventory.WalkFile(f.File, opts)
}

// walkTreeIn is walkTree in a root already open (openWalkRoot).
func (m *Walker) walkTreeIn(root walkRoot, t store.Tree, opts inventory.Options) (*inventory.Result, error) {
	f, err := m.openIn(root, t, ".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return inventory.WalkFile(f.File, opts)
}

// measureTree measures t's directory (openForWalk) for a baseline: its
// usage, less the writes in progress named (store.Walk.Writing), and what
// the walk may have missed. A tree whose directory is gone
// is empty.
func (m *Walker) measureTree(t store.Tree, writing map[string]inventory.InProgress) (quota.Usage, store.WalkSeen, error) {
	root, err := m.openWalkRoot()
	if errors.Is(err, os.ErrNotExist) {
		return quota.Usage{}, store.WalkSeen{}, nil
	}
	if err != nil {
		return quota.Usage{}, store.WalkSeen{}, err
	}
	defer root.Close()
	return m.measureTreeIn(root, t, writing)
}

// measureTreeIn is measureTree in a root already open (openWalkRoot).
func (m *Walker) measureTreeIn(root walkRoot, t store.Tree, writing map[string]inventory.InProgress) (quota.Usage, store.WalkSeen, error) {
	f, err := m.openIn(root, t, ".")
	if errors.Is(err, os.ErrNotExist) {
		return quota.Usage{}, store.WalkSeen{}, nil
	}
	if err != nil {
		return quota.Usage{}, store.WalkSeen{}, err
	}
	defer f.Close()
	u, err := inventory.MeasureWriting(f.File, writing)
	if err != nil {
		return quota.Usage{}, store.WalkSeen{}, &quota.OpError{Op: "measure", Tree: m.abs(t.Path), Err: err}
	}
	return quota.Usage{Bytes: u.Bytes, Inodes: u.Inodes}, store.WalkSeen{Unsettled: !u.Settled, Hidden: u.MountPoints > 0}, nil
}

// inProgress is a walk's Writing for the walker.
func inProgress(w store.Walk) map[string]inventory.InProgress {
	if len(w.Writing) == 0 {
		return nil
	}
	out := make(map[string]inventory.InProgress, len(w.Writing))
	for name, p := range w.Writing {
		out[name] = inventory.InProgress{Ino: p.Ino, Room: p.Room}
	}
	return out
}

// walkSeen is what a walk's result may have missed.
func walkSeen(res *inventory.Result) store.WalkSeen {
	return store.WalkSeen{Unsettled: res.Errors > 0 || res.Changed > 0, Hidden: res.MountPoints > 0}
}

// beneath is saferm.Beneath; tests make it refuse, as it does without
// CAP_SYS_ADMIN.
var beneath = saferm.Beneath
