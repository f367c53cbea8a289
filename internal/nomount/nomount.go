// Package nomount looks at and opens names in directories a tenant
// writes without asking a filesystem the tenant mounted over the name: a
// FUSE server that never answers would hold the caller, and whatever
// lock it holds, for good. It owns those calls and nothing else; it
// never follows a symlink and never automounts, and it imports nothing of
// xfsq.
package nomount

import (
	"errors"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// LookFlags: never through a symlink, never an automount, and of a mount
// root only what the kernel already holds (AT_STATX_DONT_SYNC, which on
// the tree's own filesystem changes nothing).
const LookFlags = unix.AT_SYMLINK_NOFOLLOW | unix.AT_NO_AUTOMOUNT | unix.AT_STATX_DONT_SYNC

// Lstat is lstat(2) of name in dirfd that never asks a filesystem mounted
// over name: what stands there is described as the kernel holds it (a
// mount root's st_dev is its own filesystem's, so a caller comparing
// inodes never takes it for the entry it made).
func Lstat(dirfd int, name string, st *unix.Stat_t) error {
	var sx unix.Statx_t
	if err := unix.Statx(dirfd, name, LookFlags, unix.STATX_BASIC_STATS, &sx); err != nil {
		return err
	}
	*st = FromStatx(&sx)
	return nil
}

// FromStatx is what lstat(2) would have said of the inode sx describes
// (st_dev and st_rdev encoded as the kernel's new_encode_dev, unix.Mkdev).
func FromStatx(sx *unix.Statx_t) unix.Stat_t {
	st := unix.Stat_t{
		Dev: unix.Mkdev(sx.Dev_major, sx.Dev_minor), Ino: sx.Ino, Mode: uint32(sx.Mode),
		Uid: sx.Uid, Gid: sx.Gid, Rdev: unix.Mkdev(sx.Rdev_major, sx.Rdev_minor),
		Size: int64(sx.Size), Blocks: int64(sx.Blocks),
		Atim: unix.Timespec{Sec: sx.Atime.Sec, Nsec: int64(sx.Atime.Nsec)},
		Mtim: unix.Timespec{Sec: sx.Mtime.Sec, Nsec: int64(sx.Mtime.Nsec)},
		Ctim: unix.Timespec{Sec: sx.Ctime.Sec, Nsec: int64(sx.Ctime.Nsec)},
	}
	// Stat_t's link count and block size are 64-bit on amd64, 32-bit on arm64.
	setNumber(&st.Nlink, sx.Nlink)
	setNumber(&st.Blksize, sx.Blksize)
	return st
}

// setNumber stores v in a Stat_t field whose width is the architecture's.
func setNumber[F ~uint32 | ~uint64 | ~int32 | ~int64](field *F, v uint32) { *field = F(v) }

// Openat is openat(2) of name in dirfd with flags (O_NOFOLLOW and
// O_CLOEXEC added) that refuses a mount point (EXDEV) before the
// filesystem mounted there is asked anything (openat2's RESOLVE_NO_XDEV).
// A kernel without openat2 (before Linux 5.6) opens it as openat does.
func Openat(dirfd int, name string, flags int) (int, error) {
	flags |= unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_SYMLINKS})
	if errors.Is(err, unix.ENOSYS) {
		return unix.Openat(dirfd, name, flags, 0)
	}
	return fd, err
}

// Open is Openat of path's last component in its parent directory, which
// is opened as named: for a path whose directories are the caller's (a
// sandbox's area directory) and whose last name a tenant may have mounted
// over (its tree). "/", "." and ".." are opened from the working
// directory as they are.
func Open(path string, flags int) (int, error) {
	parent, name := filepath.Split(filepath.Clean(path))
	if name == "" || name == "." || name == ".." {
		return Openat(unix.AT_FDCWD, path, flags)
	}
	if parent == "" {
		parent = "."
	}
	pfd, err := unix.Open(parent, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(pfd)
	return Openat(pfd, name, flags)
}
