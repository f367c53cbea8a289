package files_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/files"
)

// opened watches a path with inotify and reports whether anything opened it.
type opened struct{ fd int }

func watchOpens(t *testing.T, p string) *opened {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if _, err := unix.InotifyAddWatch(fd, p, unix.IN_OPEN|unix.IN_DONT_FOLLOW); err != nil {
		t.Fatalf("watch %s: %v", p, err)
	}
	return &opened{fd: fd}
}

func (o *opened) any() bool {
	buf := make([]byte, 4096)
	n, _ := unix.Read(o.fd, buf)
	return n > 0
}

// Whatever a tenant puts where a file is expected is refused by what it is,
// before it is opened: a device node is never opened (opening one can act:
// a tape rewinds, a terminal becomes the controlling one), a socket is named
// as one (not "no such device or address"). Listing one opens nothing either
// (and a FIFO cannot hang it).
func TestGetRefusesNonRegularBeforeOpening(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "omni")
	tree := filepath.Join(s.root, "projects/omni")
	cases := []struct {
		name string
		make func(p string) error
		want string
	}{
		{"chardev", func(p string) error { return unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))) }, "character device"},
		{"tty", func(p string) error { return unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(5, 0))) }, "character device"},
		{"blockdev", func(p string) error { return unix.Mknod(p, unix.S_IFBLK|0o666, int(unix.Mkdev(7, 0))) }, "block device"},
		{"fifo", func(p string) error { return unix.Mkfifo(p, 0o666) }, "FIFO"},
		{"socket", func(p string) error {
			l, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
			if err == nil {
				l.SetUnlinkOnClose(false)
				t.Cleanup(func() { l.Close() })
			}
			return err
		}, "it is a socket"},
		{"dir", func(p string) error { return os.Mkdir(p, 0o755) }, "directory"},
		{"symlink", func(p string) error {
			os.WriteFile(filepath.Join(tree, "target"), []byte("t"), 0o644)
			return os.Symlink("target", p)
		}, "symbolic link"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(tree, c.name)
			if err := c.make(p); err != nil {
				t.Fatal(err)
			}
			w := watchOpens(t, p)
			done := make(chan error, 1)
			go func() { _, err := s.l.Get(ctx, "omni", "", c.name, io.Discard); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("get hung")
			}
			var pe *files.PathError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"`+c.name+`"`) {
				t.Errorf("get: %v; want a refusal naming the path and %q", err, c.want)
			}
			if w.any() {
				t.Errorf("%s was opened before it was refused", c.name)
			}
			if c.name == "dir" || c.name == "symlink" {
				return
			}
			// ls of a name that is not a directory lists the name itself,
			// as ls does, from its lstat: nothing is opened.
			var listed []files.Entry
			go func() { var err error; listed, err = s.l.List(ctx, "omni", "", c.name); done <- err }()
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("ls hung")
			}
			if err != nil || len(listed) != 1 || listed[0].Name != c.name || listed[0].Type != "other" {
				t.Errorf("ls: %+v %v; want the one entry %s of type other", listed, err, c.name)
			}
			if w.any() {
				t.Errorf("ls opened %s", c.name)
			}
		})
	}
}

// A name swapped between the check and the open is caught by comparing the
// opened descriptor with the inode that was checked.
func TestGetChecksTheOpenedInode(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "omni")
	tree := filepath.Join(s.root, "projects/omni")
	cases := []struct {
		name string
		swap func(p string) error
		want string
	}{
		{"fifo", func(p string) error { return unix.Mkfifo(p, 0o666) }, "replaced"},
		{"device", func(p string) error { return unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))) }, "replaced"},
		{"symlink", func(p string) error { return os.Symlink("/etc/passwd", p) }, "symbolic link"},
		{"other-file", func(p string) error { return os.WriteFile(p, []byte("other"), 0o644) }, "replaced"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(tree, "f-"+c.name)
			os.WriteFile(p, []byte("checked"), 0o644)
			*files.RaceHook = func(point string) {
				if point == "get:checked" {
					os.Rename(p, p+".moved") // keeps the checked inode alive: no reuse of its number
					if err := c.swap(p); err != nil {
						t.Error(err)
					}
				}
			}
			defer func() { *files.RaceHook = nil }()
			done := make(chan error, 1)
			var out bytes.Buffer
			go func() { _, err := s.l.Get(ctx, "omni", "", "f-"+c.name, &out); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("get across a swap to a %s: %v (read %q); want a refusal mentioning %q", c.name, err, out.String(), c.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("get hung")
			}
		})
	}
}
