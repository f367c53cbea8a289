//go:build !amd64

package inventory

import (
	"golang.org/x/sys/unix"
)

// fstatat: the portable, copying form for architectures other than amd64;
// it always tells the scheduler, whatever mayBlock says.
func fstatat(dirfd int, name *byte, st *unix.Stat_t, mayBlock bool) error {
	return unix.Fstatat(dirfd, unix.BytePtrToString(name), st, unix.AT_SYMLINK_NOFOLLOW)
}
