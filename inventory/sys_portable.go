//go:build !amd64 && !arm64

package inventory

import (
	"golang.org/x/sys/unix"
)

// The portable, copying forms of the walk's system calls, for architectures
// whose stat structures differ; they always tell the scheduler, whatever
// warm says.

func fstatat(dirfd int, name *byte, st *unix.Stat_t, warm bool) error {
	return unix.Fstatat(dirfd, unix.BytePtrToString(name), st, statFlags)
}

func openDir(dirfd int, name *byte, warm bool) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if !openat2Missing.Load() {
		// RESOLVE_NO_XDEV: a mount point is refused before its filesystem
		// is asked anything (sys_direct.go).
		fd, err := unix.Openat2(dirfd, unix.BytePtrToString(name), &unix.OpenHow{Flags: flags, Resolve: unix.RESOLVE_NO_XDEV})
		if err != unix.ENOSYS {
			return fd, err
		}
		openat2Missing.Store(true)
	}
	return unix.Openat(dirfd, unix.BytePtrToString(name), flags, 0)
}

func fstat(fd int, st *unix.Stat_t, warm bool) error { return unix.Fstat(fd, st) }

func getdents(fd int, buf []byte, warm bool) (int, error) { return unix.Getdents(fd, buf) }

func closeFd(fd int, warm bool) { unix.Close(fd) }
