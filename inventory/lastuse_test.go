package inventory

import (
	"os"
	"path/filepath"
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

// A walk's LastUse is its files' LastUse: a file read lately (atime) is
// in use though written long ago, and an atime stamped in the future is
// not a use.
func TestWalkLastUseTakesReads(t *testing.T) {
	month := time.Now().Add(-30 * 24 * time.Hour).Truncate(time.Second)
	for _, c := range []struct {
		name  string
		atime time.Time
		want  time.Time
	}{
		{"read an hour ago", time.Now().Add(-time.Hour).Truncate(time.Second), time.Now().Add(-time.Hour).Truncate(time.Second)},
		{"never read since written", month.Add(-time.Hour), month},
		{"an atime stamped in 2099", time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC), month},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			f := filepath.Join(dir, "f")
			if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(f, c.atime, month); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(dir, month, month); err != nil {
				t.Fatal(err)
			}
			res, err := Walk(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Root.LastUse.Equal(c.want) {
				t.Errorf("last use %v, want %v", res.Root.LastUse, c.want)
			}
		})
	}
}
