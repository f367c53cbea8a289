//go:build !amd64

package inventory

import (
	"golang.org/x/sys/unix"
)

// fstatat: the portable, copying form for architectures other than amd64.
func fstatat(dirfd int, name *byte, st *unix.Stat_t) error {
	return unix.Fstatat(dirfd, unix.BytePtrToString(name), st, unix.AT_SYMLINK_NOFOLLOW)
}
