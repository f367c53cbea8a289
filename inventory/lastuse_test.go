package inventory

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// LastUse ages caches as BuildKit's GC does: a file's read (atime) counts,
// a directory's atime does not (walks read directories), an atime stamped
// in the future does not, and the mtime is never taken past the ctime.
func TestLastUse(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ts := func(d time.Duration) unix.Timespec { return unix.NsecToTimespec(now.Add(d).UnixNano()) }
	stat := func(mode uint32, atime, mtime, ctime time.Duration) *unix.Stat_t {
		return &unix.Stat_t{Mode: mode, Atim: ts(atime), Mtim: ts(mtime), Ctim: ts(ctime)}
	}
	const day = 24 * time.Hour
	for _, c := range []struct {
		name string
		st   *unix.Stat_t
		want time.Duration // from now
	}{
		{"a file read after it was written: its read", stat(unix.S_IFREG, -time.Hour, -30*day, -30*day), -time.Hour},
		{"a file never read since written: its mtime", stat(unix.S_IFREG, -40*day, -30*day, -30*day), -30 * day},
		{"a directory listed lately: its mtime", stat(unix.S_IFDIR, -time.Minute, -30*day, -30*day), -30 * day},
		{"an atime stamped in the future: ignored", stat(unix.S_IFREG, 365*day, -30*day, -30*day), -30 * day},
		{"an mtime stamped in the future: its ctime", stat(unix.S_IFREG, -40*day, 365*day, -2*day), -2 * day},
		{"a symlink read (readlink): its read", stat(unix.S_IFLNK, -time.Hour, -30*day, -30*day), -time.Hour},
	} {
		if got := LastUse(c.st, now.Add(time.Minute).UnixNano()); got != now.Add(c.want).UnixNano() {
			t.Errorf("%s: %v, want %v", c.name, time.Unix(0, got).UTC(), now.Add(c.want))
		}
	}
}
