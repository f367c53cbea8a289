package xfs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/nomount"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/quota/xfs/fsxattr"
)

// Assign tags dir and every entry below it with id, and sets PROJINHERIT on
// every directory so that entries created later inherit the ID — what
// `xfs_quota project -s` does. It never follows a symlink, never leaves the
// filesystem, skips FIFOs, sockets and devices (opening them can block), and
// tolerates entries that vanish during the walk.
//
// Symlinks themselves cannot be tagged through an ioctl (they cannot be
// opened); ones created after assignment inherit the ID from their directory.
func (fs *FS) Assign(dir string, id quota.ProjectID) error {
	if id == 0 {
		return &quota.OpError{Op: "assign", Tree: dir, Err: errors.New("project ID 0 is never enforced; refusing to assign it")}
	}
	if err := fs.checkParent(dir); err != nil {
		return err
	}
	fd, err := openTree(dir, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return &quota.OpError{Op: "assign", Tree: dir, ID: id, Syscall: "open", Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return &quota.OpError{Op: "assign", Tree: dir, ID: id, Syscall: "fstat", Err: err}
	}
	if st.Dev != fs.dev {
		unix.Close(fd)
		return &quota.OpError{Op: "assign", Tree: dir, ID: id,
			Err: errors.New("the tree is not on the filesystem mounted at " + fs.mount.MountPoint)}
	}
	return fs.assignDir(fd, dir, id)
}

// checkParent refuses a tree whose parent carries PROJINHERIT: the parent's
// ID would be stamped on every new sibling tree made there.
func (fs *FS) checkParent(dir string) error {
	parent := filepath.Dir(filepath.Clean(dir))
	a, err := readAttr(parent)
	if err != nil {
		return &quota.OpError{Op: "assign", Tree: dir, Syscall: "FS_IOC_FSGETXATTR on parent " + parent, Err: err}
	}
	if a.XFlags&fsxattr.FlagProjInherit != 0 {
		return &quota.OpError{Op: "assign", Tree: dir, Syscall: "FS_IOC_FSGETXATTR on parent " + parent,
			Err: errors.New("the parent directory carries PROJINHERIT (project " + strconv.FormatUint(uint64(a.ProjID), 10) +
				"), which would stamp its ID on every new sibling tree; clear it first (initialising the root does)")}
	}
	return nil
}

// ClearInherit removes PROJINHERIT and the project ID from one directory (not
// its contents): base directories that hold project trees must not carry them.
func (fs *FS) ClearInherit(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &quota.OpError{Op: "clear inherit flag on", Tree: dir, Syscall: "open", Err: err}
	}
	defer unix.Close(fd)
	a, err := fsxattr.Get(fd)
	if err != nil {
		return &quota.OpError{Op: "clear inherit flag on", Tree: dir, Syscall: "FS_IOC_FSGETXATTR", Err: err}
	}
	if a.XFlags&fsxattr.FlagProjInherit == 0 && a.ProjID == 0 {
		return nil
	}
	a.XFlags &^= fsxattr.FlagProjInherit
	a.ProjID = 0
	if err := fsxattr.Set(fd, a); err != nil {
		return &quota.OpError{Op: "clear inherit flag on", Tree: dir, Syscall: "FS_IOC_FSSETXATTR", Err: err}
	}
	return nil
}

// TreeID reads the project ID and inherit flag of one directory.
func (fs *FS) TreeID(dir string) (id quota.ProjectID, inherit bool, err error) {
	fd, err := openTree(dir, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return 0, false, &quota.OpError{Op: "read project ID of", Tree: dir, Syscall: "open", Err: err}
	}
	defer unix.Close(fd)
	a, err := fsxattr.Get(fd)
	if err != nil {
		return 0, false, &quota.OpError{Op: "read project ID of", Tree: dir, Syscall: "FS_IOC_FSGETXATTR", Err: err}
	}
	return quota.ProjectID(a.ProjID), a.XFlags&fsxattr.FlagProjInherit != 0, nil
}

// errMounted is a tree whose own directory another filesystem is mounted
// on: what a tenant writes there is not the tree's, and it is never
// entered (its server, a FUSE one, may never answer).
var errMounted = errors.New("another filesystem is mounted on it: xfsq never enters one; unmount it (umount -l)")

// openTree opens a tree's directory in its parent (one of the root's own
// directories, opened as named) through no symlink and into no mount.
func openTree(dir string, flags int) (int, error) {
	fd, err := nomount.Open(dir, flags)
	if errors.Is(err, unix.EXDEV) {
		err = errMounted
	}
	return fd, err
}

// readAttr reads the attributes of one of the root's own directories
// (never a tree: openTree).
func readAttr(path string) (fsxattr.Attr, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fsxattr.Attr{}, err
	}
	defer unix.Close(fd)
	return fsxattr.Get(fd)
}

// assignDir tags the open directory fd and everything below it, then closes fd.
func (fs *FS) assignDir(fd int, path string, id quota.ProjectID) error {
	dir := os.NewFile(uintptr(fd), path)
	defer dir.Close()
	if err := tag(fd, path, id, true); err != nil {
		return err
	}
	for {
		entries, err := dir.ReadDir(512)
		for _, e := range entries {
			if err := fs.assignEntry(fd, path, e, id); err != nil {
				return err
			}
		}
		if err == io.EOF || (err == nil && len(entries) == 0) {
			return nil
		}
		if err != nil {
			if errors.Is(err, unix.ENOENT) { // the directory itself was removed mid-walk
				return nil
			}
			return &quota.OpError{Op: "assign", Tree: path, ID: id, Syscall: "getdents64", Err: err}
		}
	}
}

func (fs *FS) assignEntry(parentFD int, parent string, e os.DirEntry, id quota.ProjectID) error {
	path := parent + "/" + e.Name()
	typ := e.Type()
	// os.File.ReadDir already resolved DT_UNKNOWN with lstat.
	if typ&(os.ModeSymlink|os.ModeNamedPipe|os.ModeSocket|os.ModeDevice|os.ModeCharDevice) != 0 {
		return nil
	}
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NOCTTY | unix.O_NONBLOCK | unix.O_CLOEXEC
	// nomount.Openat: a mount point is refused (EXDEV) before its
	// filesystem is asked anything (a tenant's FUSE server may never
	// answer); it is another filesystem's business.
	fd, err := nomount.Openat(parentFD, e.Name(), flags)
	if err != nil {
		// ELOOP: replaced by a symlink since getdents; ENOENT: removed.
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
			return nil
		}
		return vanished(err, path, id, "openat")
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return &quota.OpError{Op: "assign", Tree: path, ID: id, Syscall: "fstat", Err: err}
	}
	switch {
	case st.Dev != fs.dev: // a mount point: another filesystem's business
		unix.Close(fd)
		return nil
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		return fs.assignDir(fd, path, id)
	case st.Mode&unix.S_IFMT == unix.S_IFREG:
		err := tag(fd, path, id, false)
		unix.Close(fd)
		return err
	default: // became something else since getdents
		unix.Close(fd)
		return nil
	}
}

// tag sets the project ID (and PROJINHERIT on directories) of one open inode,
// skipping the write when it already holds.
func tag(fd int, path string, id quota.ProjectID, isDir bool) error {
	a, err := fsxattr.Get(fd)
	if err != nil {
		return &quota.OpError{Op: "assign", Tree: path, ID: id, Syscall: "FS_IOC_FSGETXATTR", Err: err}
	}
	inherit := !isDir || a.XFlags&fsxattr.FlagProjInherit != 0
	if a.ProjID == uint32(id) && inherit {
		return nil
	}
	a.ProjID = uint32(id)
	if isDir {
		a.XFlags |= fsxattr.FlagProjInherit
	}
	if err := fsxattr.Set(fd, a); err != nil {
		return &quota.OpError{Op: "assign", Tree: path, ID: id, Syscall: "FS_IOC_FSSETXATTR", Err: err}
	}
	return nil
}

func vanished(err error, path string, id quota.ProjectID, syscall string) error {
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return &quota.OpError{Op: "assign", Tree: path, ID: id, Syscall: syscall, Err: err}
}
