package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/nomount"
)

// How the layer resolves a tenant's path. os.Root keeps a path inside the
// tree but crosses every mount on the way, and crossing one asks its
// filesystem to look the next name up: a tenant's FUSE server that never
// answers would hold the request (and its thread) for good, so a tenant
// could pile up stuck requests until the server runs out of threads. The
// kernel's openat2 with RESOLVE_NO_XDEV refuses the crossing itself,
// before the mounted filesystem hears of it.

// openat2Missing is set once the kernel said ENOSYS (before Linux 5.6).
var openat2Missing atomic.Bool

// openIn opens p (cleaned, relative to the tree) with flags. A symlink on
// the way is followed only while it stays inside the tree; no mount is
// crossed, on the way or at p itself. Before Linux 5.6 (no openat2) it
// falls back to os.Root, which crosses mounts: the callers' mount checks
// after the open still refuse what is on one, but only after it answered.
func (t *tree) openIn(p string, flags int) (*os.File, error) {
	flags |= unix.O_CLOEXEC
	if flags&unix.O_PATH == 0 {
		flags |= unix.O_NOCTTY // openat2 refuses it beside O_PATH
	}
	fd, err := openat2(t.dir.Fd(), p, &unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_MAGICLINKS})
	switch {
	case err == nil:
		return os.NewFile(uintptr(fd), p), nil
	case errors.Is(err, unix.EXDEV):
		return nil, t.whyOutside(p)
	case !errors.Is(err, unix.ENOSYS):
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	root, err := t.osRoot()
	if err != nil {
		return nil, err
	}
	return root.OpenFile(p, flags&^unix.O_CLOEXEC, 0)
}

// whyOutside says why p cannot be resolved inside the tree's mount: the
// same walk without symlinks tells a mount met on the way (EXDEV again)
// from a symlink that leads out of the tree or onto a mount (ELOOP).
// Neither walk crosses a mount, so neither asks one anything.
func (t *tree) whyOutside(p string) error {
	// Without O_NOFOLLOW: p itself a symlink is refused (ELOOP) too.
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_SYMLINKS}
	fd, err := unix.Openat2(t.dir.Fd(), p, how)
	if err == nil {
		unix.Close(fd) // changed since: it was outside then all the same
	}
	if errors.Is(err, unix.EXDEV) {
		return otherMount(p)
	}
	return &PathError{Path: p, Reason: "it leads out of the project tree or onto another mount (through a symlink)"}
}

// osRoot is the tree as an os.Root, for kernels without openat2 alone.
func (t *tree) osRoot() (*os.Root, error) {
	if t.root == nil {
		root, err := os.OpenRoot(fmt.Sprintf("/proc/self/fd/%d", t.dir.Fd()))
		if err != nil {
			return nil, fmt.Errorf("open tree %s: %w", t.Path, err)
		}
		t.root = root
	}
	return t.root, nil
}

// openDir opens the directory p of the tree for reading. O_DIRECTORY and
// O_NONBLOCK: a device, FIFO or socket named here is refused by the kernel
// without being opened (opening a FIFO would hang, a device act).
func (t *tree) openDir(p string) (*os.File, error) {
	return t.openIn(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK)
}

// lstat looks at p without following it, never at what is mounted on it
// (a mount point is refused before it is looked at: stat of one would ask
// the mounted filesystem), its directory resolved as openIn resolves.
func (t *tree) lstat(p string) (fs.FileInfo, error) {
	d, err := t.openIn(path.Dir(p), unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return t.lstatAt(d, path.Base(p), p)
}

// lstatAt is lstat of name in the open directory d (p names it in errors).
func (t *tree) lstatAt(d *os.File, name, p string) (fs.FileInfo, error) {
	st, err := t.statAt(int(d.Fd()), name, p)
	if err != nil {
		return nil, err
	}
	return statInfo{name: name, st: st}, nil
}

// statMask is what the layer shows of an entry, and its mount.
const statMask = unix.STATX_BASIC_STATS | unix.STATX_MNT_ID | unix.STATX_MNT_ID_UNIQUE

// statAt looks at name in dirfd without following it, in one statx that
// also tells its mount: a mount made over the name a moment later cannot
// slip between a check and the stat (a tenant's FUSE server would be asked,
// another file's size shown). AT_STATX_DONT_SYNC: of a mount root only
// what the kernel holds is read, never asked of its filesystem (on the
// tree's own filesystem it changes nothing). A mount point is refused.
func (t *tree) statAt(dirfd int, name, p string) (unix.Stat_t, error) {
	var sx unix.Statx_t
	if err := unix.Statx(dirfd, name, nomount.LookFlags, statMask, &sx); err != nil {
		return unix.Stat_t{}, &os.PathError{Op: "lstat", Path: p, Err: err}
	}
	if !t.dir.SameMount(&sx) {
		return unix.Stat_t{}, otherMount(p)
	}
	return nomount.FromStatx(&sx), nil
}

// openAt opens name in dirfd with flags, never through a symlink nor onto
// a mount: a mount made over the name since it was checked is refused by
// the kernel before the mounted filesystem (a FUSE server, a FIFO bound
// there) is asked or opened.
func openAt(dirfd int, name string, flags int) (int, error) {
	flags |= unix.O_CLOEXEC | unix.O_NOFOLLOW
	fd, err := openat2(dirfd, name, &unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_SYMLINKS})
	if errors.Is(err, unix.ENOSYS) {
		return unix.Openat(dirfd, name, flags, 0)
	}
	return fd, err
}

// openat2 is openat2(2), asked again while the kernel says a rename
// meanwhile made it retry (EAGAIN); ENOSYS (before Linux 5.6) is
// remembered, so later calls go straight to the caller's fallback.
func openat2(dirfd int, name string, how *unix.OpenHow) (int, error) {
	if openat2Missing.Load() {
		return -1, unix.ENOSYS
	}
	for range 8 {
		fd, err := unix.Openat2(dirfd, name, how)
		switch {
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ENOSYS):
			openat2Missing.Store(true)
		}
		return fd, err
	}
	return -1, unix.EAGAIN
}

// mkdirAll makes the directories of dir that are missing, each made in
// its parent as openIn resolves it, so no mount is crossed to make one.
func (t *tree) mkdirAll(dir string) error {
	parts := strings.Split(dir, "/")
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		d, err := t.openIn(sub, unix.O_PATH|unix.O_DIRECTORY)
		if err == nil {
			d.Close()
			continue
		}
		if !errors.Is(err, unix.ENOENT) {
			return pathErr(sub, err)
		}
		parent, err := t.openIn(path.Dir(sub), unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			return pathErr(path.Dir(sub), err)
		}
		err = unix.Mkdirat(int(parent.Fd()), parts[i], 0o755)
		parent.Close()
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return pathErr(sub, &os.PathError{Op: "mkdir", Path: sub, Err: err})
		}
		// Opened again on the next round (or by the caller): what was
		// made, or raced in, is checked as anything else is.
	}
	return nil
}

// statInfo is an fs.FileInfo from a stat.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s statInfo) Name() string       { return s.name }
func (s statInfo) Size() int64        { return s.st.Size }
func (s statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s statInfo) Sys() any           { return &s.st }
func (s statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	return m
}
