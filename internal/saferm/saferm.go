// Package saferm is the one way xfsq deletes anything in a sandbox root: it
// resolves paths from directory descriptors the caller holds, removes each
// entry relative to its checked parent descriptor, and says exactly what
// went.
//
// Tenants control every byte of their trees, so this package must never
// follow a symlink (a symlink entry is unlinked itself), never resolve a
// path out of the directory it was given, never descend into or delete
// anything on another mount (bind mounts from the same filesystem included:
// mounts are told apart by statx mount IDs, not st_dev), and never report
// an inode as freed unless its last link went. It knows nothing of
// projects, journals or quotas: callers journal and account with its
// Report. Its Dir is also how a walk opens a tree without trusting what
// is mounted in it (Beneath); such a Dir only reads.
package saferm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/nomount"
)

// MaxDepth bounds how many directory levels below the removed entry are
// descended into: each level holds a descriptor open, and a tenant can nest
// directories without limit. Deeper levels are left in place and reported.
const MaxDepth = 512

// Freed is one inode a removal freed: its number and allocated bytes.
type Freed struct{ Ino, Bytes uint64 }

// MaxUncounted bounds Report.Uncounted: a removal of a million files
// written since the walk keeps the first ones, and the rest stay counted
// (the ledger over-counts) until the next walk.
const MaxUncounted = 10_000

// Reasons an entry is left in place.
const (
	LeftMount    = "mount point: left in place"
	LeftDeep     = "more than 512 directory levels deep: left in place"
	LeftChanged  = "changed while being removed: left in place"
	LeftFresh    = "modified within busy_grace while being removed: left in place"
	LeftRepo     = "a git repository or git directory (appeared since planning): left in place"
	LeftNotEmpty = "not empty after removal (entries appeared meanwhile): left in place"
)

// Report is what a removal really did.
type Report struct {
	// Removed: the named entry itself is gone.
	Removed bool `json:"removed"`
	// Entries is the names unlinked (files, symlinks, directories, …).
	Entries uint64 `json:"entries"`
	// Inodes is the inodes whose last link went; Bytes their allocated
	// bytes (blocks × 512). A hard-linked file whose other link stays frees
	// nothing and counts in neither.
	Inodes uint64 `json:"inodes"`
	Bytes  uint64 `json:"bytes"`
	// AllInodes and AllBytes are Inodes and Bytes as they would be without
	// Options.CountChangedBefore: all the removal freed. A caller that
	// credits a ledger with Bytes may still report this.
	AllInodes uint64 `json:"-"`
	AllBytes  uint64 `json:"-"`
	// Uncounted is the inodes whose last link went but which
	// Options.CountChangedBefore did not count (changed since the cutoff),
	// at most MaxUncounted of them, each on the device of the Dir the
	// removal was asked of (Dir.Dev: an inode number names one inode on
	// one device only): a caller whose own records count some of them (a
	// write through xfsq since the walk, on that device) may credit those.
	Uncounted []Freed `json:"-"`
	// Left is what stays, each with why; the directories holding a left
	// entry stay as well and are not listed.
	Left []Left `json:"left"`
}

// Left is one entry left in place.
type Left struct {
	Path   string `json:"path"` // relative to the directory Open opened
	Reason string `json:"reason"`
}

// Dir is a directory held open. Everything resolved from it stays beneath
// it and on its mount.
type Dir struct {
	fd  int
	mnt mountID
	dev uint64 // st_dev: inode numbers are unique on one device only
	rel string // from the directory Open opened, for reports
	// copy: opened in Beneath's private copy of the mount, which is for
	// reading. Removing there would reach beneath a mount point, where
	// removals never go.
	copy bool
	held *heldCopy // the copy's own descriptor, while any Dir in it is open
}

// heldCopy is open_tree's descriptor of Beneath's copy, closed with the
// last Dir opened in it. While it is open the copy is a mount namespace of
// its own; closed, the copy is dissolved and lives on, detached, only in
// the descriptors opened in it, and the kernel releases every path in a
// detached mount under the global mount lock (mntput's slow path, which
// also sends concurrent lookups back to reference walks): that was ~10 %
// of a walk's CPU, every stat of it (docs/notes/walker-profile.md). A
// mount made on the original afterwards does not appear in the copy either
// way (TestBeneathCopyHeldWhileItsDirsAreOpen).
type heldCopy struct {
	fd   int
	refs atomic.Int32
}

func (h *heldCopy) hold() *heldCopy {
	if h != nil {
		h.refs.Add(1)
	}
	return h
}

func (h *heldCopy) release() {
	if h != nil && h.refs.Add(-1) == 0 {
		unix.Close(h.fd)
	}
}

// mountID identifies a mount: the unique ID where the kernel has it (6.8),
// else the reusable one (5.8), else the device (older kernels, where
// RESOLVE_NO_XDEV still keeps descents on the mount).
type mountID struct {
	kind uint32 // the statx mask bit the id came from; 0: device numbers
	id   uint64
}

// mountMask asks statx only what tells a mount (its ID; the mount-root
// attribute comes with every answer): the kernel answers it from the
// mount itself, and with AT_STATX_DONT_SYNC a filesystem is not asked for
// fresh attributes, so a tenant's FUSE server that never answers cannot
// make the check wait.
const mountMask = unix.STATX_MNT_ID | unix.STATX_MNT_ID_UNIQUE

const statxMask = unix.STATX_TYPE | unix.STATX_MODE | unix.STATX_ATIME | unix.STATX_MTIME | unix.STATX_CTIME | unix.STATX_NLINK | unix.STATX_BLOCKS | unix.STATX_INO | unix.STATX_MNT_ID | unix.STATX_MNT_ID_UNIQUE

// Open opens the directory at path (the sandbox root: an operator's path,
// resolved as given) as the Dir every removal starts from.
func Open(path string) (*Dir, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return rootDir(fd, path, false)
}

// rootDir is the Dir every removal or walk starts from, of the directory
// open as fd (closed on error), named path.
func rootDir(fd int, path string, copy bool) (*Dir, error) {
	var st unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, statxMask, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "statx", Path: path, Err: err}
	}
	return &Dir{fd: fd, mnt: mountOf(&st), dev: devOf(&st), rel: ".", copy: copy}, nil
}

// Beneath opens the directory at path (the sandbox root) as Open does, but
// in a private copy of its mount that has no mounts below it: a detached,
// non-recursive clone (open_tree OPEN_TREE_CLONE), attached nowhere and
// held only by the descriptors opened in it. Whatever is mounted on or
// inside a tree is absent from the copy, so a walk through it sees what the
// tree's own filesystem holds there: what a tenant hid under a tmpfs or a
// FUSE mount is still on the disk and still theirs. Nothing is ever
// removed through it (its Dir is for reading); the copy dissolves when the
// last descriptor in it closes.
//
// It needs CAP_SYS_ADMIN in the mount namespace's user namespace; without
// it (or on a kernel before 5.2) the error wraps ErrCannotClone and the
// caller reads the mounts as they are.
func Beneath(path string) (*Dir, error) {
	tree, err := unix.OpenTree(unix.AT_FDCWD, path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	switch {
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EACCES):
		return nil, &os.PathError{Op: "clone the mount of", Path: path, Err: fmt.Errorf("%w: %v", ErrCannotClone, err)}
	case err != nil:
		return nil, &os.PathError{Op: "clone the mount of", Path: path, Err: err}
	}
	// open_tree gives an O_PATH descriptor; reads need a real open. It is
	// kept open with the Dirs opened in the copy (heldCopy).
	fd, err := unix.Openat(tree, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(tree)
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	d, err := rootDir(fd, path, true)
	if err != nil {
		unix.Close(tree)
		return nil, err
	}
	d.held = &heldCopy{fd: tree}
	d.held.refs.Store(1)
	return d, nil
}

// ErrCannotClone is Beneath's refusal where the process may not copy a
// mount (no CAP_SYS_ADMIN, or a kernel without open_tree).
var ErrCannotClone = errors.New("cannot copy the mount (needs CAP_SYS_ADMIN and Linux 5.2)")

func devOf(st *unix.Statx_t) uint64 { return unix.Mkdev(st.Dev_major, st.Dev_minor) }

// Dev is the device d is on (st_dev), within which inode numbers name one
// inode each: a btrfs subvolume below d, on d's mount still, has its own.
func (d *Dir) Dev() uint64 { return d.dev }

func mountOf(st *unix.Statx_t) mountID {
	switch {
	case st.Mask&unix.STATX_MNT_ID_UNIQUE != 0:
		return mountID{unix.STATX_MNT_ID_UNIQUE, st.Mnt_id}
	case st.Mask&unix.STATX_MNT_ID != 0:
		return mountID{unix.STATX_MNT_ID, st.Mnt_id}
	}
	return mountID{0, unix.Mkdev(st.Dev_major, st.Dev_minor)}
}

// sameMount reports whether st (of an entry below d) is on d's mount and
// not the root of a mount itself.
func (d *Dir) sameMount(st *unix.Statx_t) bool {
	if st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && st.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		return false
	}
	m := mountOf(st)
	return m == d.mnt
}

// SameMount reports whether st, a statx of an entry below d asked with
// STATX_MNT_ID (and STATX_MNT_ID_UNIQUE), is on d's mount and not a mount
// root: judged from the one answer, so that no mount made between two
// calls can slip between a check and a use.
func (d *Dir) SameMount(st *unix.Statx_t) bool { return d.sameMount(st) }

// Path is where d is, relative to the directory Open opened ("." for it).
func (d *Dir) Path() string { return d.rel }

// Fd is the descriptor, for reads relative to it (/proc/self/fd/N). It
// stays owned by d.
func (d *Dir) Fd() int { return d.fd }

// Close releases the descriptor.
func (d *Dir) Close() error {
	if d == nil || d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	d.held.release()
	d.held = nil
	return err
}

// ErrUnsafe wraps every refusal to resolve a path: a symlink, a component
// on another mount, something that is not a directory where one must be.
var ErrUnsafe = errors.New("not a real directory on the root's mount, reached without links")

// ErrOtherMount is the ErrUnsafe of a path that another filesystem is
// mounted on, or on one of the directories on the way to it.
var ErrOtherMount = fmt.Errorf("%w: another filesystem is mounted on it or on the way to it", ErrUnsafe)

// PathError is a refused or failed resolution.
type PathError struct {
	Path string // relative to the Dir
	Err  error
}

func (e *PathError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *PathError) Unwrap() error { return e.Err }

// split checks rel (slash-separated, relative, no "..") and returns its
// components; "." and "" are the Dir itself.
func split(rel string) ([]string, error) {
	if rel == "" || rel == "." {
		return nil, nil
	}
	if strings.HasPrefix(rel, "/") {
		return nil, fmt.Errorf("absolute path")
	}
	var parts []string
	for _, p := range strings.Split(rel, "/") {
		switch p {
		case "", ".":
			continue
		case "..":
			return nil, fmt.Errorf(`contains ".."`)
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// openat2Missing is set once the kernel said ENOSYS (before 5.6), or by
// tests; removals in several goroutines read it.
var openat2Missing atomic.Bool

// openBeneath opens the directory rel beneath dirfd without following any
// link or leaving dirfd's mount.
func (d *Dir) openBeneath(dirfd int, rel string, parts []string) (int, error) {
	if !openat2Missing.Load() {
		how := &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_MAGICLINKS}
		for range 8 {
			fd, err := unix.Openat2(dirfd, strings.Join(parts, "/"), how)
			switch {
			case err == nil:
				return fd, nil
			case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
				continue // a concurrent rename; the kernel asks to retry
			case errors.Is(err, unix.ENOSYS):
				openat2Missing.Store(true)
			case errors.Is(err, unix.EXDEV):
				return -1, &PathError{rel, ErrOtherMount}
			case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
				return -1, &PathError{rel, fmt.Errorf("%w (%v)", ErrUnsafe, err)}
			default:
				return -1, &PathError{rel, err}
			}
			break
		}
		if !openat2Missing.Load() {
			return -1, &PathError{rel, unix.EAGAIN}
		}
	}
	// Before openat2: one component at a time, each checked for its mount.
	fd, err := unix.Dup(dirfd)
	if err != nil {
		return -1, err
	}
	for _, p := range parts {
		next, err := unix.Openat(fd, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return -1, &PathError{rel, fmt.Errorf("%w (%v)", ErrUnsafe, err)}
		}
		if err != nil {
			return -1, &PathError{rel, err}
		}
		var st unix.Statx_t
		if err := unix.Statx(next, "", unix.AT_EMPTY_PATH, statxMask, &st); err != nil {
			unix.Close(next)
			return -1, &PathError{rel, err}
		}
		if !d.sameMount(&st) {
			unix.Close(next)
			return -1, &PathError{rel, ErrOtherMount}
		}
		fd = next
	}
	return fd, nil
}

// OpenDir opens the directory rel beneath d: every component a real
// directory on d's mount, no symlink anywhere. Tree roots are opened so.
func (d *Dir) OpenDir(rel string) (*Dir, error) {
	full := path.Join(d.rel, rel)
	parts, err := split(rel)
	if err != nil {
		return nil, &PathError{full, err}
	}
	if len(parts) == 0 {
		fd, err := unix.Dup(d.fd)
		if err != nil {
			return nil, err
		}
		return &Dir{fd: fd, mnt: d.mnt, dev: d.dev, rel: d.rel, copy: d.copy, held: d.held.hold()}, nil
	}
	fd, err := d.openBeneath(d.fd, full, parts)
	if err != nil {
		return nil, err
	}
	// Its own device: a btrfs subvolume shares its parent's mount but
	// numbers its inodes afresh.
	var st unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_INO, &st); err != nil {
		unix.Close(fd)
		return nil, &PathError{full, err}
	}
	return &Dir{fd: fd, mnt: d.mnt, dev: devOf(&st), rel: full, copy: d.copy, held: d.held.hold()}, nil
}

// Stat is what Lstat tells of one entry.
type Stat struct {
	Mode   uint32 // unix.S_IF* | permission bits
	Nlink  uint32
	Blocks uint64
	Atime  unix.StatxTimestamp
	Mtime  unix.StatxTimestamp
	Ctime  unix.StatxTimestamp
	// OtherMount: the entry is a mount point or on another mount.
	OtherMount bool
}

func (s Stat) AtimeNano() int64 { return s.Atime.Sec*1e9 + int64(s.Atime.Nsec) }
func (s Stat) MtimeNano() int64 { return s.Mtime.Sec*1e9 + int64(s.Mtime.Nsec) }
func (s Stat) CtimeNano() int64 { return s.Ctime.Sec*1e9 + int64(s.Ctime.Nsec) }

func (s Stat) IsDir() bool     { return s.Mode&unix.S_IFMT == unix.S_IFDIR }
func (s Stat) IsSymlink() bool { return s.Mode&unix.S_IFMT == unix.S_IFLNK }

// Lstat looks at rel beneath d without following it: its parent is
// resolved as OpenDir resolves, the entry itself is never followed.
func (d *Dir) Lstat(rel string) (Stat, error) {
	dirfd, name := d.fd, rel
	if rel == "." {
		dirfd, name = d.fd, ""
	} else if strings.Contains(rel, "/") || rel == ".." || rel == "" {
		parent, n, err := d.parent(rel)
		if err != nil {
			return Stat{}, err
		}
		defer parent.Close()
		dirfd, name = parent.fd, n
	}
	flags := unix.AT_SYMLINK_NOFOLLOW | unix.AT_NO_AUTOMOUNT
	if name == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	var st unix.Statx_t
	if err := d.statx(dirfd, name, flags, &st); err != nil {
		return Stat{}, &PathError{path.Join(d.rel, rel), err}
	}
	return Stat{Mode: uint32(st.Mode), Nlink: st.Nlink, Blocks: st.Blocks, Atime: st.Atime, Mtime: st.Mtime, Ctime: st.Ctime, OtherMount: !d.sameMount(&st)}, nil
}

// OtherMountAt reports whether name in dirfd (a directory its caller
// opened beneath d without links) is a mount point or on another mount
// than d: st_dev cannot tell, as a bind mount from the same filesystem
// keeps it. Anything that cannot be looked at counts as another mount.
func (d *Dir) OtherMountAt(dirfd int, name string) bool {
	var st unix.Statx_t
	if err := unix.Statx(dirfd, name, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT|unix.AT_STATX_DONT_SYNC, mountMask, &st); err != nil {
		return true
	}
	return !d.sameMount(&st)
}

// OtherMountFd reports whether the open descriptor fd (a file or
// directory its caller opened inside d by any route) is a mount root or on
// another mount than d. Anything that cannot be looked at counts as
// another mount.
func (d *Dir) OtherMountFd(fd int) bool {
	var st unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, mountMask, &st); err != nil {
		return true
	}
	return !d.sameMount(&st)
}

// File is a new *os.File on d's directory (its own open file
// description), for a reader that takes one (a walk). It is the caller's to
// close; d stays open. A walk of a Dir of Beneath's copy should keep d open
// as long as it reads (heldCopy).
func (d *Dir) File() (*os.File, error) {
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &PathError{d.rel, err}
	}
	return os.NewFile(uintptr(fd), d.rel), nil
}

// statx is the full statx of name in dirfd, but of a mount point (not on
// d's mount) only what tells it is one, asked first without syncing: the
// full attributes of a tenant's FUSE mount come from its server, which may
// never answer. A caller needs no more of a mount point than that it is
// one.
func (d *Dir) statx(dirfd int, name string, flags int, st *unix.Statx_t) error {
	if err := unix.Statx(dirfd, name, flags|unix.AT_STATX_DONT_SYNC, mountMask|unix.STATX_TYPE, st); err != nil || !d.sameMount(st) {
		return err
	}
	return unix.Statx(dirfd, name, flags, statxMask, st)
}

// Names lists d's entries (not "." or ".."), in no particular order.
func (d *Dir) Names() ([]string, error) {
	// A new open file description: its read offset is its own.
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &PathError{d.rel, err}
	}
	f := os.NewFile(uintptr(fd), d.rel)
	defer f.Close()
	return f.Readdirnames(-1)
}

// parent opens the directory holding rel and returns rel's last component.
func (d *Dir) parent(rel string) (*Dir, string, error) {
	parts, err := split(rel)
	if err != nil {
		return nil, "", &PathError{path.Join(d.rel, rel), err}
	}
	if len(parts) == 0 {
		return nil, "", &PathError{path.Join(d.rel, rel), errors.New("is the directory itself")}
	}
	p, err := d.OpenDir(strings.Join(parts[:len(parts)-1], "/"))
	if err != nil {
		return nil, "", err
	}
	return p, parts[len(parts)-1], nil
}

// Options change how Remove counts.
type Options struct {
	// ConfirmLastLink counts an inode as freed only when a descriptor
	// held on it shows one link just before the unlink and none after,
	// instead of trusting the link count seen by the statx before: a link
	// made meanwhile by a tenant then does not read as freed bytes. It
	// costs an open per file; whoever credits a quota ledger with the
	// Report wants it.
	ConfirmLastLink bool
	// KeepModifiedAfter, when set, leaves every file (not directory) below
	// the entry whose modification time (never later than its change time,
	// which a tenant cannot set back) is after it: a sweep passes now less
	// busy_grace, so that what a run writes into a directory while it is
	// being deleted survives (the directory is then left, not empty).
	KeepModifiedAfter time.Time

	// CountChangedBefore, when not zero, counts in Report.Bytes and
	// Inodes only the inodes whose ctime is at or before it (as seen just
	// before their removal): the start of the walk a ledger's baseline
	// came from, which counted those at their current size. An inode
	// changed since may hold bytes the walk never saw; it is removed all
	// the same but counted as freeing nothing. So is everything below a
	// directory changed since (the entry's parents included): a rename
	// changes the ctime of the directory moved, not of what it holds, so
	// a directory moved in from another tree after the walk holds files
	// that look unchanged though the walk counted them elsewhere.
	CountChangedBefore time.Time
	// KeepRepositories leaves in place, whole, every directory below the
	// entry that holds a .git or may be a git directory (a HEAD in it),
	// whatever its times say (a tar or cp -a keeps them
	// old): a repository that appeared in a workspace entry after its
	// sweep was planned is a tenant's work, not trash.
	KeepRepositories bool
	// NotDirectory removes the entry only if it is not a directory: one
	// found there (a tenant's, swapped in since the caller looked and saw a
	// file) is left in place as changed, never removed with all it holds.
	// The unlink after the check refuses a directory swapped in later.
	NotDirectory bool
}

// isRepository reports whether the directory fd holds a .git or may
// itself be a git directory: it holds a HEAD (a linked worktree's git
// directory has no objects or refs of its own, only HEAD and commondir).
func isRepository(fd int) bool {
	var st unix.Stat_t
	for _, n := range []string{".git", "HEAD"} {
		if nomount.Lstat(fd, n, &st) == nil { // a tenant's FUSE mounted there is never asked
			return true
		}
	}
	return false
}

// CountNothing as Options.CountChangedBefore counts nothing freed: every
// inode changed after it.
var CountNothing = time.Unix(0, 1)

// counts reports whether a freed inode whose ctime is ct is counted.
func (o Options) counts(ct unix.StatxTimestamp) bool {
	return o.CountChangedBefore.IsZero() || !time.Unix(ct.Sec, int64(ct.Nsec)).After(o.CountChangedBefore)
}

// ParentsSettled reports whether no directory between d and rel's last
// element changed since o.CountChangedBefore (always, without one): one
// that did may have been moved in since the walk, with all it holds. A
// caller that removes an entry of a tree through the entry's parent (to
// remove exactly what it re-checked there) asks it of the tree first, as
// Remove asks it of the directory it is given.
func (d *Dir) ParentsSettled(rel string, o Options) bool { return d.parentsSettled(rel, o, -1) }

// ParentsSettledAt is ParentsSettled for a caller that already holds rel's
// parent open as parent: the directories judged must also be the ones that
// lead to it, or what is judged is not what the caller acts in.
func (d *Dir) ParentsSettledAt(rel string, o Options, parent int) bool {
	return d.parentsSettled(rel, o, parent)
}

// parentsSettled opens the chain one name at a time from d without
// following links (a link in the path would make a judged name stand for
// another directory), judging each; parent, when not -1, must end it.
func (d *Dir) parentsSettled(rel string, o Options, parent int) bool {
	if o.CountChangedBefore.IsZero() {
		return true
	}
	parts, err := split(rel)
	if err != nil {
		return false
	}
	cur := -1 // the last directory opened; -1 while that is d itself
	defer func() {
		if cur >= 0 {
			unix.Close(cur)
		}
	}()
	at := func() int {
		if cur < 0 {
			return d.fd
		}
		return cur
	}
	for _, name := range parts[:max(len(parts)-1, 0)] {
		fd, err := unix.Openat(at(), name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if cur >= 0 {
			unix.Close(cur)
		}
		if cur = fd; err != nil {
			cur = -1
			return false
		}
		// O_PATH crossed onto whatever is mounted there without asking it;
		// its ctime is read as the kernel holds it, and a mount is not
		// settled: a tenant's FUSE server would be asked, and may never
		// answer.
		var st unix.Statx_t
		if unix.Statx(cur, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_CTIME|mountMask, &st) != nil || !d.sameMount(&st) || !o.counts(st.Ctime) {
			return false
		}
	}
	if parent < 0 {
		return true
	}
	var last, held unix.Stat_t
	return unix.Fstat(at(), &last) == nil && unix.Fstat(parent, &held) == nil && last.Dev == held.Dev && last.Ino == held.Ino
}

// testHook, when set by tests, runs after the parent of the removed
// entry is resolved and before anything is removed.
var testHook func(rel string)

// openedHook, when set by tests, runs once the removed directory is open
// and before the first read of it.
var openedHook func(rel string)

// frame is one directory being emptied.
type frame struct {
	f      *os.File // owns the descriptor; read with getdents
	parent int      // descriptor of the directory holding it
	name   string
	rel    string
	blocks uint64
	names  []string // read and not yet looked at
	kept   bool     // something below stays, so it stays too
	passes int      // reads from the start: entries may appear meanwhile

	// settled: neither it nor a directory above it changed since
	// CountChangedBefore, so what it holds may count.
	settled bool
}

// readBatch is how many names one getdents pass hands over at a time:
// memory stays bounded however many entries a directory holds.
const readBatch = 1024

// maxPasses bounds the rereads of a directory that keeps gaining entries
// while it is emptied (a tenant writing into it).
const maxPasses = 3

// Remove removes rel beneath d and everything below it, relative to
// descriptors: the parent of rel is resolved as OpenDir resolves it, each
// entry is looked at (statx, never followed) and removed relative to its
// parent's descriptor, each directory entered with openat2 beneath its
// parent and emptied iteratively. Mount points, and anything that changes
// kind while it is being removed, are left in place and reported. A
// cancelled ctx stops the removal between entries; the report says what
// went until then.
//
// The error is for what stopped the removal (rel unresolvable, ctx); what
// was left in place is in the Report, not an error.
func (d *Dir) Remove(ctx context.Context, rel string, o Options) (Report, error) {
	rep := Report{Left: []Left{}}
	if d.copy {
		return rep, &PathError{path.Join(d.rel, rel), errors.New("a directory opened by Beneath is for reading: nothing is removed beneath a mount")}
	}
	parent, name, err := d.parent(rel)
	if err != nil {
		return rep, err
	}
	defer parent.Close()
	if testHook != nil {
		testHook(rel)
	}
	r := &remover{d: d, o: o, rep: &rep}
	top, removed := r.entry(parent.fd, name, path.Join(d.rel, rel), 0, d.ParentsSettled(rel, o))
	if top == nil {
		rep.Removed = removed
		return rep, nil
	}
	if openedHook != nil {
		openedHook(rel)
	}
	stack := []*frame{top}
	defer func() {
		for _, f := range stack {
			f.f.Close()
		}
	}()
	for n := 0; len(stack) > 0; n++ {
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
		}
		fr := stack[len(stack)-1]
		if len(fr.names) == 0 {
			names, rerr := fr.f.Readdirnames(readBatch)
			if len(names) > 0 {
				fr.names = names
				continue
			}
			var done, again bool
			switch {
			case rerr != nil && rerr != io.EOF && fr.unlinked():
				// Linux reads a removed directory as ENOENT: another removal
				// took it meanwhile, so nothing of it is ours to count.
				done = true
			case rerr != nil && rerr != io.EOF:
				r.leave(fr.rel, "could not read: "+rerr.Error())
				fr.kept = true
				fallthrough
			default:
				done, again = r.rmdir(fr)
			}
			if again {
				continue // reread from the start
			}
			fr.f.Close()
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				rep.Removed = done
			} else if !done {
				stack[len(stack)-1].kept = true
			}
			continue
		}
		nm := fr.names[0]
		fr.names = fr.names[1:]
		sub, removed := r.entry(int(fr.f.Fd()), nm, fr.rel+"/"+nm, len(stack), fr.settled)
		switch {
		case sub != nil:
			stack = append(stack, sub)
		case !removed && r.kept:
			fr.kept = true
		}
	}
	return rep, nil
}

type remover struct {
	d    *Dir
	o    Options
	rep  *Report
	kept bool // the last entry looked at stays

	unchanged map[uint64]uint64 // CountChangedBefore: inode -> 1 + blocks when this removal unlinked one of its links
}

func (r *remover) leave(rel, why string) {
	r.rep.Left = append(r.rep.Left, Left{Path: rel, Reason: why})
	r.kept = true
}

// entry removes one non-directory entry of dirfd, or opens a directory to
// empty and returns its frame. removed: the entry went; neither removed
// nor a frame with r.kept false: it was gone already.
// modifiedAt is when an inode was last modified as a sweep judges it: its
// mtime, but never later than its ctime (a future stamp must not pin it).
func modifiedAt(st *unix.Statx_t) time.Time {
	m := time.Unix(st.Mtime.Sec, int64(st.Mtime.Nsec))
	if c := time.Unix(st.Ctime.Sec, int64(st.Ctime.Nsec)); c.Before(m) {
		return c
	}
	return m
}

func (r *remover) entry(dirfd int, name, rel string, depth int, settled bool) (sub *frame, removed bool) {
	r.kept = false
	var st unix.Statx_t
	err := r.d.statx(dirfd, name, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, &st)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, false // gone meanwhile (another removal): nothing of ours
	case err != nil:
		r.leave(rel, "could not look at it: "+err.Error())
		return nil, false
	case !r.d.sameMount(&st):
		r.leave(rel, LeftMount)
		return nil, false
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if !r.o.KeepModifiedAfter.IsZero() && modifiedAt(&st).After(r.o.KeepModifiedAfter) {
			r.leave(rel, LeftFresh)
			return nil, false
		}
		return nil, r.unlink(dirfd, name, rel, &st, settled)
	}
	if depth == 0 && r.o.NotDirectory {
		r.leave(rel, LeftChanged)
		return nil, false
	}
	if depth >= MaxDepth {
		r.leave(rel, LeftDeep)
		return nil, false
	}
	fd, err := r.d.openBeneath(dirfd, rel, []string{name})
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, false
	case errors.Is(err, ErrUnsafe):
		// Swapped for a link or a mount since the statx: leave it.
		r.leave(rel, LeftChanged)
		return nil, false
	case err != nil:
		r.leave(rel, "could not open: "+err.Error())
		return nil, false
	}
	var fst unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, statxMask, &fst); err != nil || fst.Ino != st.Ino || !r.d.sameMount(&fst) {
		unix.Close(fd)
		r.leave(rel, LeftChanged)
		return nil, false
	}
	if r.o.KeepRepositories && (name == ".git" || isRepository(fd)) {
		unix.Close(fd)
		r.leave(rel, LeftRepo)
		return nil, false
	}
	return &frame{f: os.NewFile(uintptr(fd), rel), parent: dirfd, name: name, rel: rel, blocks: fst.Blocks,
		settled: settled && r.o.counts(fst.Ctime)}, false
}

// unlink removes a non-directory, counting it.
func (r *remover) unlink(dirfd int, name, rel string, st *unix.Statx_t, settled bool) bool {
	held := -1
	if r.o.ConfirmLastLink {
		fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if !errors.Is(err, unix.ENOENT) {
				r.leave(rel, "could not open: "+err.Error())
			}
			return false
		}
		defer unix.Close(fd)
		var fst unix.Statx_t
		if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, statxMask, &fst); err != nil || fst.Ino != st.Ino || !r.d.sameMount(&fst) {
			r.leave(rel, LeftChanged)
			return false
		}
		held, st = fd, &fst
	}
	err := unix.Unlinkat(dirfd, name, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return false // another removal got it first: it counts it, not us
	case errors.Is(err, unix.EISDIR):
		r.leave(rel, LeftChanged)
		return false
	case errors.Is(err, unix.EBUSY):
		r.leave(rel, LeftMount)
		return false
	case err != nil:
		r.leave(rel, "could not remove: "+err.Error())
		return false
	}
	r.rep.Entries++
	if r.lastLinkWent(held, st) {
		r.rep.AllInodes++
		r.rep.AllBytes += st.Blocks * 512
		if blocks, ok := r.counted(st); ok && settled {
			r.rep.Inodes++
			r.rep.Bytes += blocks * 512
		} else if !r.o.CountChangedBefore.IsZero() && len(r.rep.Uncounted) < MaxUncounted && devOf(st) == r.d.dev {
			r.rep.Uncounted = append(r.rep.Uncounted, Freed{Ino: st.Ino, Bytes: st.Blocks * 512})
		}
	} else if settled && st.Nlink > 1 && !r.o.CountChangedBefore.IsZero() && r.o.counts(st.Ctime) && r.unchanged[st.Ino] == 0 {
		// Our unlink changes its ctime: remember what the walk saw.
		if r.unchanged == nil {
			r.unchanged = map[uint64]uint64{}
		}
		r.unchanged[st.Ino] = st.Blocks + 1
	}
	return true
}

// counted is the blocks a freed inode counts for under CountChangedBefore:
// all of them when it is unchanged since the cutoff; when only this
// removal's unlink of another of its links changed it, no more than it
// held then; else none.
func (r *remover) counted(st *unix.Statx_t) (uint64, bool) {
	if r.o.counts(st.Ctime) {
		return st.Blocks, true
	}
	if b := r.unchanged[st.Ino]; b > 0 {
		return min(b-1, st.Blocks), true
	}
	return 0, false
}

// lastLinkWent: the inode had one link just before the unlink and, with
// a descriptor held on it, has none now. Both, because two removers of two
// links of one inode may each see no link left afterwards; only the one
// that saw a single link before counts it.
func (r *remover) lastLinkWent(held int, before *unix.Statx_t) bool {
	if before.Nlink != 1 {
		return false
	}
	if held < 0 {
		return true
	}
	var st unix.Statx_t
	return unix.Statx(held, "", unix.AT_EMPTY_PATH, unix.STATX_NLINK, &st) == nil && st.Nlink == 0
}

// unlinked: the directory held is no longer linked anywhere.
func (fr *frame) unlinked() bool {
	var st unix.Statx_t
	return unix.Statx(int(fr.f.Fd()), "", unix.AT_EMPTY_PATH, unix.STATX_NLINK, &st) == nil && st.Nlink == 0
}

// rmdir removes an emptied directory: done, it went; again, entries
// appeared meanwhile and fr is to be read again from the start.
func (r *remover) rmdir(fr *frame) (done, again bool) {
	if fr.kept {
		return false, false
	}
	err := unix.Unlinkat(fr.parent, fr.name, unix.AT_REMOVEDIR)
	switch {
	case errors.Is(err, unix.ENOTEMPTY), errors.Is(err, unix.EEXIST):
		if fr.passes++; fr.passes < maxPasses {
			if _, err := fr.f.Seek(0, io.SeekStart); err == nil {
				return false, true
			}
		}
		r.leave(fr.rel, LeftNotEmpty)
		return false, false
	case errors.Is(err, unix.ENOENT):
		return true, false // gone, though not by us: nothing to count
	case errors.Is(err, unix.EBUSY):
		r.leave(fr.rel, LeftMount)
		return false, false
	case err != nil:
		r.leave(fr.rel, "could not remove: "+err.Error())
		return false, false
	}
	r.rep.Entries++
	// The held descriptor tells whether the directory removed is the one
	// emptied (one swapped in meanwhile would leave ours linked).
	if fr.unlinked() {
		r.rep.AllInodes++
		r.rep.AllBytes += fr.blocks * 512
		if fr.settled {
			r.rep.Inodes++
			r.rep.Bytes += fr.blocks * 512
		}
	}
	return true, false
}
