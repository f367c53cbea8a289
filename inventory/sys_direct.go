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
//
// Every pointer is turned into a uintptr inside the call to unix.Syscall6
// or unix.RawSyscall6 themselves (assembly that cannot grow the stack),
// never before a Go call: a stat buffer is often a caller's local
// variable on a goroutine stack, and a stack that grows in between moves
// it, so the kernel would fill the old copy and the walk read zeros
// (TestSyscallWrappersSurviveAStackThatGrows).

func errnoErr(e unix.Errno) error {
	if e != 0 {
		return e
	}
	return nil
}

// fstatat is newfstatat(2) with statFlags.
func fstatat(dirfd int, name *byte, st *unix.Stat_t, warm bool) error {
	var e unix.Errno
	if warm {
		_, _, e = unix.RawSyscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(st)), statFlags, 0, 0)
	} else {
		_, _, e = unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(st)), statFlags, 0, 0)
	}
	return errnoErr(e)
}

// openDir opens a directory for reading, never through a symlink.
func openDir(dirfd int, name *byte, warm bool) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	var fd uintptr
	var e unix.Errno
	if !openat2Missing.Load() {
		// RESOLVE_NO_XDEV: a mount point is refused (EXDEV) before anything
		// is asked of the filesystem mounted there, which may be a tenant's
		// FUSE server that never answers.
		if warm {
			fd, _, e = unix.RawSyscall6(unix.SYS_OPENAT2, uintptr(dirfd), uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(&openDirHow)), unsafe.Sizeof(openDirHow), 0, 0)
		} else {
			fd, _, e = unix.Syscall6(unix.SYS_OPENAT2, uintptr(dirfd), uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(&openDirHow)), unsafe.Sizeof(openDirHow), 0, 0)
		}
		if e != unix.ENOSYS {
			return int(fd), errnoErr(e)
		}
		openat2Missing.Store(true)
	}
	if warm {
		fd, _, e = unix.RawSyscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(name)), flags, 0, 0, 0)
	} else {
		fd, _, e = unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(name)), flags, 0, 0, 0)
	}
	return int(fd), errnoErr(e)
}

// openDirHow is openDir's openat2 request; the kernel only reads it.
var openDirHow = unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_XDEV}

func fstat(fd int, st *unix.Stat_t, warm bool) error {
	var e unix.Errno
	if warm {
		_, _, e = unix.RawSyscall6(unix.SYS_FSTAT, uintptr(fd), uintptr(unsafe.Pointer(st)), 0, 0, 0, 0)
	} else {
		_, _, e = unix.Syscall6(unix.SYS_FSTAT, uintptr(fd), uintptr(unsafe.Pointer(st)), 0, 0, 0, 0)
	}
	return errnoErr(e)
}

func getdents(fd int, buf []byte, warm bool) (int, error) {
	var n uintptr
	var e unix.Errno
	if warm {
		n, _, e = unix.RawSyscall6(unix.SYS_GETDENTS64, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
	} else {
		n, _, e = unix.Syscall6(unix.SYS_GETDENTS64, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
	}
	return int(n), errnoErr(e)
}

func closeFd(fd int, warm bool) {
	if warm {
		unix.RawSyscall6(unix.SYS_CLOSE, uintptr(fd), 0, 0, 0, 0, 0)
	} else {
		unix.Syscall6(unix.SYS_CLOSE, uintptr(fd), 0, 0, 0, 0, 0)
	}
}
