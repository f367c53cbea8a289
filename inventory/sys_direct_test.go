//go:build amd64 || arm64

package inventory

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// The raw wrappers hand the kernel the address of a caller's variable,
// which may be on a goroutine stack. If the stack grew (and so moved)
// between taking the address and the system call, the kernel would write
// into the old stack and the caller would read a zero stat: a directory
// taken for another filesystem's and skipped, a file of 0 bytes. Calls are
// made at every stack depth over a range, from fresh goroutines (whose
// small stacks grow soonest), so that some call falls on a growth.
func TestSyscallWrappersSurviveAStackThatGrows(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	var want unix.Stat_t
	if err := unix.Lstat(filepath.Join(dir, "f"), &want); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var wantDir unix.Stat_t
	if err := unix.Fstat(fd, &wantDir); err != nil {
		t.Fatal(err)
	}
	name := []byte("f\x00")
	for _, warm := range []bool{true, false} {
		for depth := range 400 {
			got := make(chan [3]uint64)
			go func() {
				got <- atDepth(depth, func() [3]uint64 {
					var st, dst unix.Stat_t
					var buf [512]byte
					fstatat(fd, &name[0], &st, warm)
					fstat(fd, &dst, warm)
					unix.Seek(fd, 0, 0)
					n, _ := getdents(fd, buf[:], warm)
					return [3]uint64{st.Ino, dst.Ino, uint64(n)}
				})
			}()
			if g := <-got; g[0] != want.Ino || g[1] != wantDir.Ino || g[2] == 0 {
				t.Fatalf("warm %v, depth %d: fstatat gave inode %d (want %d), fstat %d (want %d), getdents %d bytes",
					warm, depth, g[0], want.Ino, g[1], wantDir.Ino, g[2])
			}
		}
	}
}

// atDepth calls f depth frames further down the stack.
//
//go:noinline
func atDepth(depth int, f func() [3]uint64) [3]uint64 {
	var pad [8]uint64 // each frame takes some stack
	if depth == 0 {
		return f()
	}
	r := atDepth(depth-1, f)
	r[2] += pad[depth%8]
	return r
}
