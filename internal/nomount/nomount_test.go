package nomount

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
)

// Of every kind of entry a tenant makes, Lstat says what lstat(2) says.
func TestLstatIsLstat(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "file"), make([]byte, 10_000), 0o640)
	os.Link(filepath.Join(dir, "file"), filepath.Join(dir, "hardlink"))
	os.Symlink("/etc/passwd", filepath.Join(dir, "symlink"))
	os.Mkdir(filepath.Join(dir, "sub"), 0o700)
	unix.Mkfifo(filepath.Join(dir, "fifo"), 0o600)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	for _, name := range []string{"file", "hardlink", "symlink", "sub", "fifo", "gone"} {
		var got, want unix.Stat_t
		gerr, werr := Lstat(fd, name, &got), unix.Fstatat(fd, name, &want, unix.AT_SYMLINK_NOFOLLOW)
		if !errors.Is(gerr, werr) && (gerr != nil || werr != nil) {
			t.Errorf("%s: error %v, lstat's %v", name, gerr, werr)
			continue
		}
		if got != want {
			t.Errorf("%s:\n Lstat %+v\n lstat %+v", name, got, want)
		}
	}
}

// A name a tenant mounted a FUSE filesystem over, whose server never
// answers: Lstat answers at once with the mount root as the kernel holds
// it (another device), and Openat refuses it (EXDEV) without asking.
func TestAStalledMountIsNeverAsked(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"dir", "file"} {
		p := filepath.Join(dir, name)
		if name == "dir" {
			os.Mkdir(p, 0o755)
		} else {
			os.WriteFile(p, []byte("x"), 0o644)
		}
		mounttest.StalledFUSE(t, p)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var parent unix.Stat_t
	unix.Fstat(fd, &parent)
	for _, name := range []string{"dir", "file"} {
		done := make(chan error, 2)
		var st unix.Stat_t
		go func() { done <- Lstat(fd, name, &st) }()
		go func() {
			fd, err := Openat(fd, name, unix.O_RDONLY)
			if err == nil {
				unix.Close(fd)
			}
			done <- err
		}()
		for range 2 { // what each answered is checked below
			select {
			case <-done:
			case <-time.After(3 * time.Second):
				t.Fatalf("%s: waited on the stalled FUSE server mounted there", name)
			}
		}
	}
	var st unix.Stat_t
	if err := Lstat(fd, "dir", &st); err != nil || st.Dev == parent.Dev {
		t.Errorf("Lstat of the mount root: %v, device %d (the directory's %d): want the mount's own", err, st.Dev, parent.Dev)
	}
	if _, err := Openat(fd, "dir", unix.O_RDONLY|unix.O_DIRECTORY); !errors.Is(err, unix.EXDEV) {
		t.Errorf("Openat of a mount point: %v, want EXDEV", err)
	}
	// By path: the parent as named, the mount point refused.
	if _, err := Open(filepath.Join(dir, "dir"), unix.O_RDONLY|unix.O_DIRECTORY); !errors.Is(err, unix.EXDEV) {
		t.Errorf("Open of a mount point: %v, want EXDEV", err)
	}
	if fd, err := Open(dir, unix.O_RDONLY|unix.O_DIRECTORY); err != nil {
		t.Errorf("Open of the directory holding the mounts: %v", err)
	} else {
		unix.Close(fd)
	}
}
