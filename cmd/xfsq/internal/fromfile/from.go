// Package fromfile opens the file `xfsq files put --from` names, as root,
// without letting a tenant choose it. A file under the sandbox root
// belongs to a tenant, who can swap it (or any directory above it) for a
// link to a host file between the operator's look and the copy. So --from
// is resolved here one component at a time, and refused as soon as a
// directory on the way lies inside the root (or on a mount that shows part
// of it); its final component is opened without following a link. Such a
// file is copied through the file layer instead, whose beneath rules hold
// against the tenant.
//
// It only opens: it never reads the store or a backend, and never writes.
package fromfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/procfs"
	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliargs"
	"golang.org/x/sys/unix"
)

// maxFromLinks bounds the links followed on the way, as the kernel's 40.
const maxFromLinks = 40

// Open opens --from, which must be a regular file outside the sandbox
// root, for files put into project/path. It is opened non-blocking, so a
// FIFO with no writer (or a device) does not hang the open beyond the
// reach of SIGINT and SIGTERM, and is refused once its type is known;
// reads are then made blocking again.
func Open(from, root, project, path string) (*os.File, error) {
	var rootStat unix.Stat_t
	if err := unix.Stat(root, &rootStat); err != nil {
		return nil, fmt.Errorf("sandbox root: %w", &os.PathError{Op: "stat", Path: root, Err: err})
	}
	dir, base := filepath.Split(from)
	if base == "" || base == "." || base == ".." {
		return nil, cliargs.Usagef("--from %s names a directory, not a regular file; give a regular file, or pipe it on stdin", from)
	}
	mounts, err := sandboxMountsOf(root)
	if err != nil {
		return nil, fmt.Errorf("sandbox root %s: %w", root, err)
	}
	dirfd, err := openDirOutsideRoot(dir, &rootStat, mounts)
	if errors.Is(err, errInsideRoot) {
		return nil, cliargs.Usagef("--from %s lies inside the sandbox root %s, where a tenant can swap it for a link to any host file; "+
			"copy it through the file layer instead: xfsq files get PROJECT PATH | xfsq files put %s %s", from, root, project, path)
	}
	if errors.Is(err, errProcLink) {
		return nil, cliargs.Usagef("--from %s %v", from, err)
	}
	if err != nil {
		return nil, cliargs.Usagef("--from: %v", &os.PathError{Op: "open", Path: from, Err: err})
	}
	defer unix.Close(dirfd)
	fd, err := unix.Openat(dirfd, base, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, cliargs.Usagef("--from %s is a symbolic link, which files put does not follow; give the file it points to", from)
	}
	if err != nil {
		return nil, cliargs.Usagef("--from: %v", &os.PathError{Op: "open", Path: from, Err: err})
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, cliargs.Usagef("--from: %v", &os.PathError{Op: "stat", Path: from, Err: err})
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, cliargs.Usagef("--from %s: it is %s, not a regular file; give a regular file, or pipe it on stdin", from, area.FileKind(st.Mode))
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("--from %s: %w", from, err)
	}
	return os.NewFile(uintptr(fd), from), nil
}

var errInsideRoot = errors.New("inside the sandbox root")

// errProcLink refuses /proc's magic links (a process's root, cwd, fds):
// their text is a path in the process's own namespace, and a tenant's
// process chooses it, so it cannot be followed as a path in ours.
var errProcLink = errors.New("goes through a link in /proc, which names a path in another process's view: copy the file out of it first")

// isOnProc reports whether the directory fd is on procfs.
func isOnProc(fd int) (bool, error) {
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return false, err
	}
	return fs.Type == unix.PROC_SUPER_MAGIC, nil
}

// openDirOutsideRoot opens dir (O_PATH) as the kernel would resolve it,
// following links itself so that every directory passed on the way is
// seen: errInsideRoot if one of them lies inside the root.
func openDirOutsideRoot(dir string, root *unix.Stat_t, mounts *sandboxMounts) (int, error) {
	start := "."
	if filepath.IsAbs(dir) {
		start = "/"
	}
	fd, err := openPathDir(unix.AT_FDCWD, start)
	if err != nil {
		return -1, err
	}
	pending := strings.Split(dir, "/")
	for links := 0; ; {
		inside, err := isInside(fd, root)
		if err == nil && !inside {
			inside, err = mounts.exposes(fd)
		}
		if err != nil || inside {
			unix.Close(fd)
			return -1, cmpErr(err, errInsideRoot)
		}
		if len(pending) == 0 {
			return fd, nil
		}
		name := pending[0]
		pending = pending[1:]
		if name == "" || name == "." {
			continue
		}
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Close(fd)
			return -1, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			unix.Close(next)
			unix.Close(fd)
			return -1, err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			unix.Close(fd)
			fd = next
		case unix.S_IFLNK:
			if onProc, err := isOnProc(fd); err != nil || onProc {
				unix.Close(next)
				unix.Close(fd)
				return -1, cmpErr(err, errProcLink)
			}
			target, err := readLink(next)
			unix.Close(next)
			if links++; err == nil && links > maxFromLinks {
				err = unix.ELOOP
			}
			if err == nil && strings.HasPrefix(target, "/") {
				unix.Close(fd)
				fd, err = openPathDir(unix.AT_FDCWD, "/")
			}
			if err != nil {
				unix.Close(fd)
				return -1, err
			}
			pending = append(strings.Split(target, "/"), pending...)
		default:
			unix.Close(next)
			unix.Close(fd)
			return -1, unix.ENOTDIR
		}
	}
}

// cmpErr is err, or when it is nil, otherwise.
func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

func openPathDir(at int, name string) (int, error) {
	return unix.Openat(at, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// readLink is the target of the link fd (opened O_PATH|O_NOFOLLOW).
func readLink(fd int) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// isInside reports whether the directory fd is the root or lies below it,
// climbing by ".." (never a link) and comparing device and inode, so a
// bind mount or a linked alias of the root is found too.
func isInside(fd int, root *unix.Stat_t) (bool, error) {
	cur, err := unix.Dup(fd)
	if err != nil {
		return false, err
	}
	defer func() { unix.Close(cur) }()
	var st unix.Stat_t
	if err := unix.Fstat(cur, &st); err != nil {
		return false, err
	}
	for {
		if st.Dev == root.Dev && st.Ino == root.Ino {
			return true, nil
		}
		parent, err := openPathDir(cur, "..")
		if err != nil {
			return false, err
		}
		unix.Close(cur)
		cur = parent
		var up unix.Stat_t
		if err := unix.Fstat(cur, &up); err != nil {
			return false, err
		}
		if up.Dev == st.Dev && up.Ino == st.Ino {
			return false, nil // "/" is its own parent
		}
		st = up
	}
}

// sandboxMounts tells the mounts that show part of the sandbox root's tree
// elsewhere: a project's tree bind-mounted for a container or a backup is
// still the tenant's, yet climbing ".." from it ends at its mount point and
// never meets the root.
type sandboxMounts struct {
	byID map[int]*procfs.MountInfo
	dev  string // the root's filesystem, as mountinfo's major:minor
	path string // the root's path within that filesystem
}

func sandboxMountsOf(root string) (*sandboxMounts, error) {
	all, err := procfs.GetMounts()
	if err != nil {
		return nil, err
	}
	s := &sandboxMounts{byID: make(map[int]*procfs.MountInfo, len(all))}
	for _, m := range all {
		s.byID[m.MountID] = m
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	m, err := s.mountOf(unix.AT_FDCWD, real, 0)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(m.MountPoint, real)
	if err != nil {
		return nil, err
	}
	s.dev, s.path = m.MajorMinorVer, filepath.Join(m.Root, rel)
	return s, nil
}

// mountOf is the mount name (at dirfd) lies on, by its mount ID.
func (s *sandboxMounts) mountOf(dirfd int, name string, flags int) (*procfs.MountInfo, error) {
	var stx unix.Statx_t
	if err := unix.Statx(dirfd, name, flags|unix.AT_STATX_SYNC_AS_STAT, unix.STATX_MNT_ID, &stx); err != nil {
		return nil, err
	}
	m := s.byID[int(stx.Mnt_id)]
	if m == nil || stx.Mask&unix.STATX_MNT_ID == 0 {
		// Mounted since /proc/self/mountinfo was read, or a kernel
		// without mount IDs: nothing tells where it leads.
		return nil, fmt.Errorf("the mount of a directory on the way is not in /proc/self/mountinfo: %w", errInsideRoot)
	}
	return m, nil
}

// exposes reports whether the directory fd lies on a mount of the root's
// filesystem whose own root is the sandbox root or lies below it: all of
// such a mount is the tenants'. A mount whose root lies above the sandbox
// root's holds it whole, and isInside's climb meets the root on it.
func (s *sandboxMounts) exposes(fd int) (bool, error) {
	m, err := s.mountOf(fd, "", unix.AT_EMPTY_PATH)
	if err != nil {
		return false, err
	}
	return m.MajorMinorVer == s.dev && (m.Root == s.path || strings.HasPrefix(m.Root, strings.TrimSuffix(s.path, "/")+"/")), nil
}
