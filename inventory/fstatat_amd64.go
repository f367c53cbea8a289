package inventory

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// fstatat is newfstatat(2) with AT_SYMLINK_NOFOLLOW on a name that is
// already NUL-terminated in memory (unix.Fstatat would copy it into a new
// C string for every file).
//
// With mayBlock false it is made as a raw syscall, without telling the Go
// scheduler: that bookkeeping is about 8 % of a warm walk. A raw call that
// does block (on a disk read) holds its P until the read completes, so the
// walker asks for it only where the stats hit the cache.
func fstatat(dirfd int, name *byte, st *unix.Stat_t, mayBlock bool) error {
	var errno unix.Errno
	if mayBlock {
		_, _, errno = unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(name)),
			uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
	} else {
		_, _, errno = unix.RawSyscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(name)),
			uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
	}
	if errno != 0 {
		return errno
	}
	return nil
}
