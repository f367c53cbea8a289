// Package diskfull tells a write that failed because the filesystem is full
// from a quota's refusal (no project's limit is at fault then), and keeps
// the reserve beside an embedded store that makes room to journal a
// deletion on a full disk. It is a leaf beneath the core: it reads the
// filesystem's free room and writes only the reserve, in the state
// directory it is given; it never reads the store, a tree or a limit.
package diskfull

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/units"
)

// Error is a write that failed because the filesystem has no room
// left, as opposed to a quota's refusal: no limit of any project is at
// fault, and what frees room is deleting something anywhere on it.
type Error struct {
	Dir        string // the directory whose filesystem is full
	Free, Size uint64 // bytes free (to unprivileged users) and in all
	// Inodes is the filesystem's inode count when it is the inodes that
	// ran out (bytes may be free); 0 when it is the bytes.
	Inodes uint64
	Err    error // what failed
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("the filesystem holding %s is full (%s free of %s)", e.Dir, units.FormatIEC(e.Free), units.FormatIEC(e.Size))
	if e.Inodes > 0 {
		msg = fmt.Sprintf("the filesystem holding %s has no free inodes (0 of %d; %s of %s free)", e.Dir, e.Inodes, units.FormatIEC(e.Free), units.FormatIEC(e.Size))
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// fullBelow is how little room counts as a full filesystem when what
// failed cannot say how much it needed: less than SQLite needs to open its
// store and journal a deletion.
const fullBelow = 1 << 20

// Check returns an Error for err when the filesystem holding dir
// has less than need bytes free (at least fullBelow), or no free inode:
// the reason a write there failed, ENOSPC or not, is then the filesystem,
// not a quota. It returns nil when the filesystem has room (or cannot be
// asked).
func Check(dir string, need uint64, err error) *Error {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil || st.Blocks == 0 {
		return nil // a pseudo-filesystem, or an unreadable one: no claim either way
	}
	free, size := st.Bavail*uint64(st.Bsize), st.Blocks*uint64(st.Bsize)
	if st.Files > 0 && st.Ffree == 0 {
		return &Error{Dir: dir, Free: free, Size: size, Inodes: st.Files, Err: err}
	}
	if free >= max(need, fullBelow) {
		return nil
	}
	return &Error{Dir: dir, Free: free, Size: size, Err: err}
}

// Explain is err, or, when err is a write that failed for want of room
// (store.Full) and the filesystem holding root is in fact full, an Error
// saying so: the store's codes decide, not its words.
func Explain(root string, err error) error {
	var full *Error
	if err == nil || errors.As(err, &full) || !store.Full(err) {
		return err
	}
	if f := Check(root, 0, err); f != nil {
		return f
	}
	return err
}

// ReservePath is a file of zeroes that xfsq keeps in its state directory
// (stateDir), beside an embedded store, so that deleting it makes room for the store's journal when the
// filesystem is full: xfsq files rm must journal a deletion before it
// makes it, and cannot when not one block is left.
func ReservePath(stateDir string) string { return filepath.Join(stateDir, "reserve") }

// reserveSize is the reserve's size on a filesystem of size bytes: enough
// for SQLite to open the store and journal a few deletions, and never a
// noticeable share of a small filesystem.
func reserveSize(size uint64) int64 { return int64(min(max(size/64, 256<<10), 4<<20)) }

// EnsureReserve makes the reserve if it is missing and the filesystem has
// room to spare for it (four times its size), so it never takes the last
// free bytes from the tenants. Errors are ignored: the reserve is a help
// on a full disk, not a condition for anything.
func EnsureReserve(stateDir string) {
	p := ReservePath(stateDir)
	if _, err := os.Lstat(p); err == nil || !errors.Is(err, os.ErrNotExist) {
		return
	}
	var st unix.Statfs_t
	if unix.Statfs(filepath.Dir(p), &st) != nil {
		return
	}
	n := reserveSize(st.Blocks * uint64(st.Bsize))
	if st.Bavail*uint64(st.Bsize) < 4*uint64(n) {
		return
	}
	tmp := p + ".new"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return
	}
	// Allocated blocks, not a hole: a sparse file frees nothing.
	err = unix.Fallocate(int(f.Fd()), 0, 0, n)
	if err != nil {
		_, err = f.Write(make([]byte, n))
	}
	if err == nil {
		err = f.Sync()
	}
	f.Close()
	if err != nil {
		os.Remove(tmp)
		return
	}
	os.Rename(tmp, p)
}

// ReleaseReserve deletes the reserve, making its room available; it
// reports whether there was one.
func ReleaseReserve(stateDir string) bool { return os.Remove(ReservePath(stateDir)) == nil }
