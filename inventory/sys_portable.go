//go:build !amd64 && !arm64

package inventory

import (
	"golang.org/x/sys/unix"
)

// The portable, copying forms of the walk's system calls, for architectures
// whose stat structures differ; they always tell the scheduler, whatever
// warm says.

func fstatat(dirfd int, name *byte, st *unix.Stat_t, warm bool) error {
	return unix.Fstatat(dirfd, unix.BytePtrToString(name), st, unix.AT_SYMLINK_NOFOLLOW)
}

func openDir(dirfd int, name *byte, warm bool) (int, error) {
	return unix.Openat(dirfd, unix.BytePtrToString(name), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

func fstat(fd int, st *unix.Stat_t, warm bool) error { return unix.Fstat(fd, st) }

func getdents(fd int, buf []byte, warm bool) (int, error) { return unix.Getdents(fd, buf) }

func closeFd(fd int, warm bool) { unix.Close(fd) }
