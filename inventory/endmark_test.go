package inventory

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// The walk stops reading an ext4 directory at the read whose last record
// has d_off endOfExt4Dir. That is safe only if ext4 puts the mark there
// at the end and nowhere else: every read that ends early (a small or a
// full buffer) must not carry it, and the read after it must return 0.
func TestExt4MarksTheEndOfADirectoryAndOnlyThere(t *testing.T) {
	root := t.TempDir()
	if _, endMark := filesystemTraits(openDirT(t, root)); !endMark {
		prereq.Missing(t, "TMPDIR is not on ext4: the end mark is ext4's (set TMPDIR to a directory on ext4)")
	}
	sizes := map[string]int{"empty": 0, "one": 1, "fifty": 50, "three-buffers": 1500}
	for name, n := range sizes {
		d := filepath.Join(root, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("file-with-a-long-name-%04d", i)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	every := filepath.Join(root, "every-length") // records of every length, the longest too
	os.Mkdir(every, 0o755)
	for i := range 200 {
		if err := os.Mkdir(filepath.Join(every, strings.Repeat("n", 55+i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sizes["every-length"] = 200
	for name, n := range sizes {
		for _, bufSize := range []int{32 << 10, 1 << 10, 300} { // the walk's, and ones that cut reads short
			t.Run(fmt.Sprintf("%s/%d", name, bufSize), func(t *testing.T) {
				fd := openDirT(t, filepath.Join(root, name))
				buf := make([]byte, bufSize)
				names, marked := 0, false
				for {
					got, err := unix.Getdents(fd, buf)
					if err != nil {
						t.Fatal(err)
					}
					if got == 0 {
						break
					}
					if marked {
						t.Fatalf("a read after the end mark returned %d bytes: stopping at the mark would miss them", got)
					}
					last := 0
					for off := 0; off < got; off += int(*(*uint16)(unsafe.Pointer(&buf[off+16]))) {
						last = off
						names++
					}
					marked = *(*int64)(unsafe.Pointer(&buf[last+8])) == endOfExt4Dir
				}
				if !marked {
					t.Error("the last read did not carry the end mark: the walk makes one more read a directory here")
				}
				if names != n+2 { // . and ..
					t.Errorf("read %d names, want %d", names, n+2)
				}
			})
		}
	}
}

func openDirT(t *testing.T, dir string) int {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}
