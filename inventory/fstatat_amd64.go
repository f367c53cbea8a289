package inventory

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// fstatat is newfstatat(2) with AT_SYMLINK_NOFOLLOW on a name that is
// already NUL-terminated in memory (unix.Fstatat would copy it into a new
// C string for every file).
func fstatat(dirfd int, name *byte, st *unix.Stat_t) error {
	_, _, errno := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(name)),
		uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
