package diskfull

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// Check tells a full filesystem from one with room, by bytes and by
// inodes, and names the directory and the numbers.
func TestDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		prereq.Missing(t, "a full filesystem needs root to mount a tmpfs (run the tests as root)")
	}
	cases := []struct {
		name, opts string
		fill       func(dir string)
		want       string // "" for not full
	}{
		{"room", "size=4m", func(string) {}, ""},
		{"bytes", "size=4m", func(dir string) {
			f, _ := os.Create(filepath.Join(dir, "filler"))
			for _, err := f.Write(make([]byte, 64<<10)); err == nil; _, err = f.Write(make([]byte, 64<<10)) {
			}
			f.Close()
		}, "is full (0 B free of 4.0 MiB)"},
		{"inodes", "size=4m,nr_inodes=16", func(dir string) {
			for i := 0; ; i++ {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), nil, 0o644); err != nil {
					return
				}
			}
		}, "has no free inodes (0 of 16"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := unix.Mount("tmpfs", dir, "tmpfs", 0, c.opts); err != nil {
				prereq.Missing(t, "mount a tmpfs: "+err.Error())
			}
			defer unix.Unmount(dir, unix.MNT_DETACH)
			c.fill(dir)
			cause := errors.New("cause")
			full := Check(dir, 0, cause)
			switch {
			case c.want == "" && full != nil:
				t.Errorf("a filesystem with room: %v", full)
			case c.want != "" && (full == nil || !strings.Contains(full.Error(), "the filesystem holding "+dir+" ") ||
				!strings.Contains(full.Error(), c.want) || !errors.Is(full, cause)):
				t.Errorf("got %v; want it to name %s and say %q, wrapping the cause", full, dir, c.want)
			}
		})
	}
}
