// Package files is the safe file layer of a sandbox root: list, read, write
// and delete files inside one project tree. Writes are admitted before they
// allocate anything, through the core's accounting (Core, Write: on the
// fallback backend by reservations in the store, atomic across processes;
// on XFS the kernel enforces and xfsq adds the per-write limit) — files
// never calls the store nor asks which backend is in force, and never
// imports package sandbox, which implements Core and hands the layer out
// (Root.Files) — written to an unnamed file
// (O_TMPFILE, else a named temporary one) and put in place only when
// complete and only as the inode written, so a refused or failed write
// leaves the old content as it was and a swapped temporary name can never
// be placed. Deletions are journalled. The CLI and the HTTP API share this layer.
//
// Every path is resolved beneath the tree without crossing a mount
// (resolve.go): it must never read, write or delete outside the tree,
// follow a symlink out of it, ask a filesystem mounted inside it anything,
// or open a device, FIFO or socket.
package files

import (
	"container/heap"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/units"
)

// Layer serves the trees of one sandbox root.
type Layer struct {
	// m is the core the layer works through: shells reach files from the
	// root they hold (sandbox.Root.Files), never by composing a layer.
	m Core
	// The settings writes obey (New reads them; a test may change them).
	WriteSettings
}

// New is the layer over c for reads and writes, with the write settings
// (max_file_bytes, root_budget, reservation_ttl, soft_grace) read in one
// query.
func New(ctx context.Context, c Core) (*Layer, error) {
	ws, err := c.WriteSettings(ctx)
	if err != nil {
		return nil, err
	}
	return &Layer{m: c, WriteSettings: ws}, nil
}

// ForReads is the layer over c for listing, reading and removing: none of
// those needs the write settings, so none is read.
func ForReads(c Core) *Layer { return &Layer{m: c} }

// ForWrites is the layer with the write settings in force now: another
// process may have changed them since this layer was made.
func (l *Layer) ForWrites(ctx context.Context) (*Layer, error) { return New(ctx, l.m) }

// tree is one opened project tree.
type tree struct {
	Tree
	label string      // `project "omni" workspace`
	dir   *saferm.Dir // the tree's directory, every path resolved beneath it
	root  *os.Root    // the same, opened only where the kernel has no openat2
}

func (t *tree) Close() error {
	if t.root != nil {
		t.root.Close()
	}
	return t.dir.Close()
}

// open opens a ready project's tree. The tree's own path is
// resolved without following any link or crossing a mount (saferm), so a
// symlink planted at projects/NAME cannot point the layer at another tree.
func (l *Layer) open(ctx context.Context, name, a string) (*tree, error) {
	t, err := l.m.Tree(ctx, name, a)
	if err != nil {
		return nil, err
	}
	sandbox, err := saferm.Open(l.m.Dir())
	if err != nil {
		return nil, err
	}
	dir, err := sandbox.OpenDir(t.Path)
	sandbox.Close()
	if errors.Is(err, saferm.ErrOtherMount) {
		// Not xfsq's to repair: someone (a tenant's container, whose mount
		// reached the host) must unmount it.
		abs := filepath.Join(l.m.Dir(), t.Path)
		return nil, errkind.WithFix(errkind.NotReady, fmt.Errorf("open tree %s: %w", t.Path, err),
			errkind.Fix("xfsq never reads or writes through a mount in a tree: unmount it (findmnt -R "+abs+", umount -l)"))
	}
	if err != nil {
		return nil, errkind.WithFix(errkind.Of(err), fmt.Errorf("open tree %s: %w", t.Path, err), errkind.Fix("run %s", errkind.Do(errkind.OpDoctor, "")))
	}
	label := fmt.Sprintf("project %q", name)
	if t.Area != area.Workspace {
		label += " " + t.Area
	}
	return &tree{Tree: t, label: label, dir: dir}, nil
}

// openPath cleans p, refuses the tree itself (saying why), and opens the tree.
func (l *Layer) openPath(ctx context.Context, name, area, p string, notTheTree errkind.Hint) (*tree, string, error) {
	p, err := Clean(p)
	if err != nil {
		return nil, "", err
	}
	if p == "." {
		return nil, "", &PathError{Path: p, Reason: "it is the tree itself", Fix: notTheTree}
	}
	t, err := l.open(ctx, name, area)
	return t, p, err
}

// Entry is one directory entry.
type Entry struct {
	Name    string    `json:"name"`
	Type    string    `json:"type"` // file, dir, symlink, other
	Size    int64     `json:"size_bytes"`
	ModTime time.Time `json:"modified_at"`
	// Ino is the file's inode number (Open only), for a validator that
	// changes when the name is given another file.
	Ino uint64 `json:"-"`
}

// List lists a directory of a tree.
func (l *Layer) List(ctx context.Context, name, area, p string) ([]Entry, error) {
	entries, _, err := l.ListPage(ctx, name, area, p, "", 0)
	return entries, err
}

// ListPage lists at most limit entries of a directory (0: all), the first
// by name after the name after, sorted by name; more says whether names
// follow. Only the page is held and stat'ed, never the whole directory: a
// tenant's directory of millions of long names must not make a shared
// server hold them all, once per concurrent request.
func (l *Layer) ListPage(ctx context.Context, name, area, p, after string, limit int) (entries []Entry, more bool, err error) {
	p, err = Clean(p)
	if err != nil {
		return nil, false, err
	}
	t, err := l.open(ctx, name, area)
	if err != nil {
		return nil, false, err
	}
	defer t.Close()
	var parent *os.File // p's directory, of any p but the tree itself
	var base string
	if p != "." {
		// A mount point is refused before it is opened: opening a tenant's
		// FUSE mount asks its server, which may never answer.
		if parent, base, err = openParent(t, p); err != nil {
			return nil, false, err
		}
		defer parent.Close()
		if _, err := t.statAt(int(parent.Fd()), base, p); err != nil {
			return nil, false, pathErr(p, err) // a mount point, or nothing there
		}
	}
	f, err := t.openDir(p)
	if errors.Is(err, unix.ENOTDIR) {
		// Not a directory: list the name itself, as ls does, from its
		// lstat alone (nothing is opened: it may be a FIFO or a device),
		// and only if neither it nor a directory on the way is a mount:
		// a file bind-mounted over the tree's, or one in a directory
		// mounted from elsewhere, is not the tree's to show. The mount
		// check made above is made again after the lstat, so that a mount
		// made between the two is seen.
		if parent == nil {
			return nil, false, pathErr(p, err) // the tree itself, not a directory
		}
		fi, lerr := t.lstatAt(parent, base, p)
		if lerr != nil {
			return nil, false, pathErr(p, lerr)
		}
		if t.dir.OtherMountFd(int(parent.Fd())) {
			return nil, false, otherMount(p)
		}
		if fi.IsDir() {
			return nil, false, pathErr(p, err) // replaced meanwhile
		}
		return []Entry{entryOf(base, fi)}, false, nil
	}
	if err != nil {
		return nil, false, pathErr(p, err)
	}
	defer f.Close()
	if t.dir.OtherMountFd(int(f.Fd())) {
		return nil, false, otherMount(p)
	}
	names, more, err := pageNames(f, after, limit)
	if err != nil {
		return nil, false, pathErr(p, err)
	}
	out := make([]Entry, 0, len(names))
	for _, n := range names {
		// Relative to the directory listed: the path is not resolved again.
		st, err := t.statAt(int(f.Fd()), n, n)
		if err != nil {
			if errors.As(err, new(*PathError)) {
				// A mount point: its name is the tree's, what it shows is not.
				out = append(out, Entry{Name: n, Type: "other"})
			}
			continue // else vanished
		}
		out = append(out, entryOf(n, statInfo{name: n, st: st}))
	}
	return out, more, nil
}

// pageNames reads a directory in batches and keeps only the limit smallest
// names after after (all names when limit is 0), sorted; more says whether
// other names after after were left out. The kept names are a max-heap, so
// a directory of n names costs n log limit whatever order it reads in.
func pageNames(f *os.File, after string, limit int) (names []string, more bool, err error) {
	h := &maxHeap{}
	for {
		batch, err := f.Readdirnames(1024)
		for _, n := range batch {
			switch {
			case n <= after:
			case limit == 0 || h.Len() < limit:
				heap.Push(h, n)
			case n < (*h)[0]:
				more = true
				(*h)[0] = n
				heap.Fix(h, 0)
			default:
				more = true
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(batch) == 0) {
			break
		}
		if err != nil {
			return nil, false, err
		}
	}
	slices.Sort(*h)
	return *h, more, nil
}

// maxHeap is a heap of names, the largest on top (container/heap).
type maxHeap []string

func (h maxHeap) Len() int           { return len(h) }
func (h maxHeap) Less(i, j int) bool { return h[i] > h[j] }
func (h maxHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *maxHeap) Push(x any)        { *h = append(*h, x.(string)) }
func (h *maxHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// entryOf is the listing of one name from its lstat.
func entryOf(name string, fi fs.FileInfo) Entry {
	e := Entry{Name: name, Type: "other", Size: fi.Size(), ModTime: fi.ModTime().UTC()}
	switch {
	case fi.Mode().IsRegular():
		e.Type = "file"
	case fi.IsDir():
		e.Type = "dir"
	case fi.Mode()&fs.ModeSymlink != 0:
		e.Type = "symlink"
	}
	return e
}

// otherMount is the refusal of p because it, or a directory on the way to
// it, is on another mount than the tree: a tenant (or anyone) may have
// mounted something inside the tree, and nothing on it is the tree's.
func otherMount(p string) error {
	return &PathError{Path: p, Reason: "it is on another mount (a mount point inside the tree)"}
}

// pathErr turns the errors of opening a path into messages that name it.
func pathErr(p string, err error) error {
	var said *PathError
	if errors.As(err, &said) {
		return err // says already what is wrong with which path
	}
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Err.Error() == "path escapes from parent" {
		return &PathError{Path: p, Reason: "it leads out of the project tree (through a symlink)"}
	}
	if errors.Is(err, os.ErrNotExist) {
		return errkind.New(errkind.NotFound, fmt.Errorf("%s: %w", p, os.ErrNotExist))
	}
	if errors.Is(err, unix.ENOTDIR) {
		// A file where the path needs a directory (f.txt/x): the caller's
		// path is wrong, not the server.
		return &PathError{Path: p, Reason: "a part of it is a file, not a directory"}
	}
	if errors.Is(err, unix.ELOOP) {
		return &PathError{Path: p, Reason: "a symbolic link on the way loops, or leads through too many others"}
	}
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		// Root is refused only by what the tree's owner set on it: an
		// immutable or append-only attribute (chattr +i, +a) on the name
		// or its directory. The tree's state, which its owner can change.
		return errkind.New(errkind.Conflict, fmt.Errorf("%s: %w (is an immutable or append-only attribute, chattr +i or +a, set on it or its directory?)", p, err))
	}
	if errors.Is(err, unix.EAGAIN) {
		// openat2 gave up: renames kept happening while it resolved the
		// path (a tenant's, or anyone's: the kernel's rename counter is
		// global). The tree's activity, not xfsq's failure.
		return errkind.New(errkind.Conflict, fmt.Errorf("%s: renames kept changing the tree while the path was resolved; try again", p))
	}
	// The path an os.Root error names is the descriptor's
	// (/proc/self/fd/N/…): an operator knows the tree's path, not that.
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %s: %w", p, pe.Op, pe.Err)
	}
	return fmt.Errorf("%s: %w", p, err)
}

// checkReadable refuses what must not be read through the layer. It is
// given the lstat of the name, before anything is opened: opening a device
// node can have effects of its own (a tape rewinds, a terminal becomes the
// controlling one), so no open may reach one.
func checkReadable(p string, st *unix.Stat_t) error {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		return &PathError{Path: p, Reason: "it is a directory; list it instead"}
	case unix.S_IFCHR, unix.S_IFBLK, unix.S_IFIFO, unix.S_IFSOCK:
		return &PathError{Path: p, Reason: "it is " + area.FileKind(st.Mode)}
	case unix.S_IFLNK:
		return &PathError{Path: p, Reason: "it is a symbolic link; xfsq reads no links (name what it points to)"}
	default:
		return &PathError{Path: p, Reason: "it is not a regular file"}
	}
	if st.Nlink > 1 {
		return &PathError{Path: p, Reason: fmt.Sprintf("it has %d hard links and may be shared with a file outside the tree", st.Nlink)}
	}
	return nil
}

// raceHook lets tests act at the points where a tenant could swap a name
// between a check and its use; nil outside tests.
var raceHook func(point string)

func hook(point string) {
	if raceHook != nil {
		raceHook(point)
	}
}

// openParent opens the directory holding p (beneath the tree, so no
// component leads out of it or onto a mount) and returns it with p's last
// name. What is then done to that name is done relative to this one
// descriptor, so a directory swapped in later cannot redirect it. The
// mount is checked again on the descriptor: without openat2 the open
// crossed mounts.
func openParent(t *tree, p string) (*os.File, string, error) {
	dir := path.Dir(p)
	d, err := t.openDir(dir)
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) {
			return nil, "", &PathError{Path: dir, Reason: "it is not a directory"}
		}
		return nil, "", pathErr(dir, err)
	}
	if t.dir.OtherMountFd(int(d.Fd())) {
		d.Close()
		return nil, "", otherMount(p)
	}
	return d, path.Base(p), nil
}

// Get copies a regular file of a tree to w, at most the size it had when
// opened. It returns the number of bytes copied.
func (l *Layer) Get(ctx context.Context, name, area, p string, w io.Writer) (int64, error) {
	f, e, err := l.Open(ctx, name, area, p)
	if err != nil {
		return 0, err
	}
	if f == nil {
		return 0, &PathError{Path: p, Reason: "it is a directory; list it instead"}
	}
	defer f.Close()
	return io.Copy(w, io.LimitReader(f, e.Size))
}

// Open opens a path of a tree for reading, as Get reads it: a regular file
// comes back open, with its Entry (size and mtime from the descriptor, Ino
// for a validator); a directory comes back as its Entry (Type "dir") and a
// nil file, for the caller to List. Anything else is refused before it is
// opened: a symlink (even one that stays inside), a device, FIFO or socket,
// a file with other hard links, a name on another mount. The file is the
// very inode that was checked, opened relative to its checked parent's
// descriptor; the caller closes it.
func (l *Layer) Open(ctx context.Context, name, area, p string) (*os.File, Entry, error) {
	p, err := Clean(p)
	if err != nil {
		return nil, Entry{}, err
	}
	t, err := l.open(ctx, name, area)
	if err != nil {
		return nil, Entry{}, err
	}
	defer t.Close()
	if p == "." {
		var st unix.Stat_t
		if err := unix.Fstat(t.dir.Fd(), &st); err != nil {
			return nil, Entry{}, err
		}
		return nil, Entry{Name: ".", Type: "dir", ModTime: time.Unix(st.Mtim.Unix()).UTC()}, nil
	}
	dir, base, err := openParent(t, p)
	if err != nil {
		return nil, Entry{}, err
	}
	defer dir.Close()
	dfd := int(dir.Fd())
	fi, err := t.lstatAt(dir, base, p) // a mount point is refused, not asked
	if err != nil {
		return nil, Entry{}, pathErr(p, err)
	}
	before := *fi.Sys().(*unix.Stat_t)
	if before.Mode&unix.S_IFMT == unix.S_IFLNK {
		// Say where a link leads when it leads out: that is what a reader wants to know.
		if f, err := t.openIn(p, unix.O_PATH); err == nil {
			f.Close()
		} else if pe := pathErr(p, err); errors.As(pe, new(*PathError)) {
			return nil, Entry{}, pe
		}
	}
	if before.Mode&unix.S_IFMT == unix.S_IFDIR {
		return nil, Entry{Name: base, Type: "dir", ModTime: time.Unix(before.Mtim.Unix()).UTC()}, nil
	}
	if err := checkReadable(p, &before); err != nil {
		return nil, Entry{}, err
	}
	hook("get:checked")
	// The name may have been swapped since the check: O_NOFOLLOW and
	// O_NONBLOCK keep a link or FIFO put there from being followed or
	// hanging, O_NOCTTY keeps a terminal from becoming ours, and the
	// descriptor must then be the very inode that was checked.
	fd, err := openAt(dfd, base, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, Entry{}, &PathError{Path: p, Reason: "it was replaced by a symbolic link while being opened"}
		}
		if errors.Is(err, unix.EXDEV) {
			return nil, Entry{}, otherMount(p) // mounted over since the check
		}
		return nil, Entry{}, pathErr(p, &os.PathError{Op: "open", Path: p, Err: err})
	}
	f := os.NewFile(uintptr(fd), p)
	fail := func(err error) (*os.File, Entry, error) {
		f.Close()
		return nil, Entry{}, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fail(err)
	}
	if st.Dev != before.Dev || st.Ino != before.Ino {
		return fail(&PathError{Path: p, Reason: "it was replaced by another file while being opened"})
	}
	if t.dir.OtherMountFd(fd) {
		return fail(otherMount(p)) // mounted over the name since the check
	}
	if err := checkReadable(p, &st); err != nil {
		return fail(err)
	}
	return f, Entry{Name: base, Type: "file", Size: st.Size, ModTime: time.Unix(st.Mtim.Unix()).UTC(), Ino: st.Ino}, nil
}

// Remove deletes a file or directory of a tree, journalling it as
// storage.evicted (reason manual) before and after. It resolves the path
// without following links, removes relative to the checked parent's
// descriptor, never enters or removes a mount point, and on the fallback
// backend credits the ledger with what this removal really freed (an
// inode only when its last link went), so concurrent removals of one file
// credit it once and hard links to a file that stays credit nothing.
func (l *Layer) Remove(ctx context.Context, name, a, p string, opts ...RemoveOptions) (RemoveResult, error) {
	var o RemoveOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	// As rm takes "f/": the name must be a directory's.
	o.mustBeDir = strings.HasSuffix(p, "/")
	t, p, err := l.openPath(ctx, name, a, p, errkind.Fix("use %s", errkind.Do(errkind.OpProjectRemove, "", "purge", "")))
	if err != nil {
		return RemoveResult{}, err
	}
	defer t.Close()
	if area.IsSkeleton(t.Area, p) {
		return l.empty(ctx, t, name, p, o)
	}
	return l.removeIn(ctx, t, name, p, o)
}

// RemoveOptions are what a caller asks of a removal.
type RemoveOptions struct {
	// Recursive allows a directory, with everything in it; without it a
	// directory is refused, as rm refuses one without -r.
	Recursive bool

	mustBeDir bool // the path ended in "/"
}

// recursiveRemove is the removal a directory needs.
var recursiveRemove = errkind.Do(errkind.OpFilesRemove, "", "recursive", "")

// errDirectory refuses a directory removed without Recursive.
func errDirectory(p string) error {
	return errkind.WithFix(errkind.Input, &PathError{Path: p, Reason: "it is a directory"},
		errkind.Fix("ask for a recursive removal to delete it and everything in it (%s)", recursiveRemove))
}

// empty removes what a skeleton directory (uploads/, inbox/) holds, each
// entry journalled on its own, and leaves the directory: every workspace
// has it, and tenants and the sweep count on it being there.
func (l *Layer) empty(ctx context.Context, t *tree, name, p string, o RemoveOptions) (RemoveResult, error) {
	res := RemoveResult{Path: path.Join(t.Path, p), State: deletion.StateDone, Left: []saferm.Left{}}
	if !o.Recursive {
		return res, errkind.WithFix(errkind.Input,
			&PathError{Path: p, Reason: "it is part of every workspace (uploads/ and inbox/ are emptied, never removed)"},
			errkind.Fix("ask for a recursive removal to delete what it holds and keep it (%s)", recursiveRemove))
	}
	f, err := t.openIn(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK)
	if err != nil {
		return res, pathErr(p, err)
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return res, pathErr(p, err)
	}
	slices.Sort(names)
	o.mustBeDir = false // of the skeleton directory, not of what it holds
	for _, n := range names {
		one, err := l.removeIn(ctx, t, name, path.Join(p, n), o)
		res.Entries += one.Entries
		res.Bytes += one.Bytes
		res.Files += one.Files
		res.Left = append(res.Left, one.Left...)
		if one.State != deletion.StateDone && one.State != "" {
			res.State = one.State
		}
		var gone *PathError
		if errors.As(err, &gone) && errors.Is(err, os.ErrNotExist) {
			continue // removed meanwhile: that is what was asked
		}
		var left *LeftError
		if errors.As(err, &left) {
			continue // named in Left; the others still go
		}
		if err != nil {
			return res, err
		}
	}
	if len(res.Left) > 0 {
		return res, &LeftError{res}
	}
	return res, nil
}

// removeIn removes p of an open tree.
func (l *Layer) removeIn(ctx context.Context, t *tree, name, p string, o RemoveOptions) (RemoveResult, error) {
	parent, err := t.dir.OpenDir(path.Dir(p))
	if errors.Is(err, saferm.ErrUnsafe) {
		return RemoveResult{}, &PathError{Path: p, Reason: "it leads out of the project tree (through a symlink or a mount)"}
	}
	if err != nil {
		return RemoveResult{}, pathErr(p, err)
	}
	defer parent.Close()
	st, err := parent.Lstat(path.Base(p))
	if err != nil {
		return RemoveResult{}, pathErr(p, err)
	}
	if st.OtherMount {
		return RemoveResult{}, &PathError{Path: p, Reason: "it is a mount point; it is never removed"}
	}
	if st.IsDir() && !o.Recursive {
		return RemoveResult{}, errDirectory(p)
	}
	if !st.IsDir() && o.mustBeDir {
		return RemoveResult{}, &PathError{Path: p + "/", Reason: "it is not a directory (the path ends in /)"}
	}
	// The pending record carries an estimate; the settled one what went.
	estimate := st.Blocks * 512
	if st.IsDir() {
		if u, err := measureIn(t, p); err == nil {
			estimate = u.Bytes
		}
	}
	rec := deletion.Record{Area: t.Area, Bytes: estimate, Reason: "manual", Policy: journal.PolicyFilesRemove}
	hook("rm:checked")
	cutoff, err := t.RemovalCutoff(ctx)
	if err != nil {
		return RemoveResult{}, err
	}
	started := time.Now()
	// Removed by its path in the tree, not its name in parent: what is
	// credited depends on every directory between the two being unchanged
	// since the walk (saferm.Options.CountChangedBefore), and one moved in
	// since may be any of them.
	rec, rep, rmErr := l.m.RemoveJournalled(ctx, name, t.dir, p, rec, saferm.Options{ConfirmLastLink: true, CountChangedBefore: cutoff,
		// Without Recursive no directory goes, also one a tenant swaps in
		// for the file checked above.
		NotDirectory: !o.Recursive})
	// The answer is all that went (as the journal's settled record); the
	// ledger is credited only what the walk counted (rep.Bytes, below).
	res := RemoveResult{Path: rec.Path, Bytes: rep.AllBytes, Files: rep.AllInodes, Entries: rep.Entries, State: rec.State, Left: rep.Left}
	if rec.State == deletion.StatePending {
		return res, fmt.Errorf("remove %s: %w", p, rmErr)
	}
	// What went, went, whatever else failed: credit it.
	credit := t.CreditRemoval(context.WithoutCancel(ctx), quota.Usage{Bytes: rep.Bytes, Inodes: rep.Inodes}, rep.Uncounted, started)
	switch {
	case rmErr != nil:
		return res, fmt.Errorf("remove %s (%d entries removed before it stopped): %w", p, rep.Entries, rmErr)
	case rep.Entries == 0 && len(rep.Left) == 0:
		return res, pathErr(p, os.ErrNotExist) // another removal got there first
	case len(rep.Left) > 0:
		return res, &LeftError{res}
	}
	return res, credit
}

// RemoveResult says what a removal really did.
type RemoveResult struct {
	Path    string `json:"path"`            // relative to the sandbox root
	State   string `json:"state"`           // as journalled: done, partial, failed
	Entries uint64 `json:"removed_entries"` // names removed
	// Bytes and Files are what was freed: the inodes whose last link went.
	Bytes uint64        `json:"freed_bytes"`
	Files uint64        `json:"removed_files"`
	Left  []saferm.Left `json:"left"` // left in place, with why
}

// LeftError is a removal that left part of the entry in place (a mount
// point inside it, an entry that changed meanwhile).
type LeftError struct{ Result RemoveResult }

// Kind: what is left collides with the tree's state (a mount point, an
// entry changed meanwhile); retrying as is leaves it again.
func (e *LeftError) Kind() errkind.Kind { return errkind.Conflict }

func (e *LeftError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "removed %d entries of %s, %s freed; left in place:", e.Result.Entries, e.Result.Path, units.FormatIEC(e.Result.Bytes))
	for i, l := range e.Result.Left {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " %s (%s)", l.Path, l.Reason)
	}
	return b.String()
}

// measureIn is what deleting the directory p inside root gives back:
// inventory's one measure, without the files that also have links outside
// p (they stay, and crediting them would let the ledger under-count). The
// directory is opened beneath the tree, so no name on the way is followed
// out of it or onto a mount.
func measureIn(t *tree, p string) (quota.Usage, error) {
	d, err := t.openDir(p)
	if err != nil {
		return quota.Usage{}, pathErr(p, err)
	}
	defer d.Close()
	u, err := inventory.MeasureFile(d)
	return quota.Usage{Bytes: u.FreeBytes, Inodes: u.FreeInodes}, err
}

// tempName is a fresh name for a temporary file at the tree's top.
func tempName() string {
	b := make([]byte, 8)
	rand.Read(b)
	return tempPrefix + hex.EncodeToString(b)
}
