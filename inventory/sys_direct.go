//go:build amd64 || arm64

package inventory

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The walk's five system calls, on names already NUL-terminated in memory
// (unix.Fstatat and unix.Openat copy every name into a new C string).
//
// With warm set they are made as raw syscalls, without telling the Go
// scheduler. That bookkeeping, and the thread hand-offs it causes when a
// call outlasts a scheduler tick, are ~15 % of a warm walk. A raw call that
// does block (on a disk read) holds its P until the read completes, so the
// walker asks for it only where the kernel answers from its caches.

func sys(warm bool, trap, a1, a2, a3, a4 uintptr) (uintptr, error) {
	var r uintptr
	var errno unix.Errno
	if warm {
		r, _, errno = unix.RawSyscall6(trap, a1, a2, a3, a4, 0, 0)
	} else {
		r, _, errno = unix.Syscall6(trap, a1, a2, a3, a4, 0, 0)
	}
	if errno != 0 {
		return r, errno
	}
	return r, nil
}

// fstatat is newfstatat(2) with AT_SYMLINK_NOFOLLOW.
func fstatat(dirfd int, name *byte, st *unix.Stat_t, warm bool) error {
	_, err := sys(warm, unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW)
	return err
}

// openDir opens a directory for reading, never through a symlink.
func openDir(dirfd int, name *byte, warm bool) (int, error) {
	fd, err := sys(warm, unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(name)),
		unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	return int(fd), err
}

func fstat(fd int, st *unix.Stat_t, warm bool) error {
	_, err := sys(warm, unix.SYS_FSTAT, uintptr(fd), uintptr(unsafe.Pointer(st)), 0, 0)
	return err
}

func getdents(fd int, buf []byte, warm bool) (int, error) {
	n, err := sys(warm, unix.SYS_GETDENTS64, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0)
	return int(n), err
}

func closeFd(fd int, warm bool) {
	sys(warm, unix.SYS_CLOSE, uintptr(fd), 0, 0, 0)
}
