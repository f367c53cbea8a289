// Package mounttest mounts things inside a test's temporary directories
// (bind mounts, tmpfs, a FUSE mount that never answers), to show that
// deletions never cross into a mount and that nothing waits on one.
// It needs root (CAP_SYS_ADMIN); without it the test goes through
// prereq.Missing, so CI=true fails instead of skipping. It must never
// mount anywhere but where the test says, and unmounts when the test ends.
package mounttest

import (
	"bytes"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// Bind bind-mounts src (a directory or a file) on dst until t ends.
func Bind(t testing.TB, src, dst string) {
	t.Helper()
	mount(t, src, dst, "", unix.MS_BIND, "")
}

// Tmpfs mounts a small fresh tmpfs on dst until t ends.
func Tmpfs(t testing.TB, dst string) {
	t.Helper()
	mount(t, "none", dst, "tmpfs", 0, "size=4m")
}

func mount(t testing.TB, src, dst, fstype string, flags uintptr, data string) {
	t.Helper()
	if os.Geteuid() != 0 {
		prereq.Missing(t, "mount tests need root with CAP_SYS_ADMIN: run them as root")
		return
	}
	if err := unix.Mount(src, dst, fstype, flags, data); err != nil {
		prereq.Missing(t, "mount "+dst+": "+err.Error()+" (run the tests as root with CAP_SYS_ADMIN)")
		return
	}
	// Registered after the temporary directories exist, so it runs before
	// they are removed: their removal never meets the mount.
	t.Cleanup(func() { unix.Unmount(dst, unix.MNT_DETACH) })
}

// StalledFUSE mounts a FUSE filesystem on dst (a directory, or a file:
// its root is then a file) whose server never answers, not even the
// kernel's first request, as a hostile tenant's can: whatever asks it
// anything waits until the server hangs up (the waiters get ENOTCONN),
// which the returned func does, and t's end does too, detaching the mount.
func StalledFUSE(t testing.TB, dst string) (hangUp func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		prereq.Missing(t, "mount tests need root with CAP_SYS_ADMIN: run them as root")
		return func() {}
	}
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		prereq.Missing(t, "open /dev/fuse: "+err.Error()+" (the FUSE case needs the fuse module and its device)")
		return func() {}
	}
	rootmode := "40000"
	// Never through a mount already there (a stalled one, stacked on);
	// not nomount's Lstat, whose own tests use this package.
	var st unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, dst, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_TYPE, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
		rootmode = "100000"
	}
	opts := "fd=" + strconv.Itoa(fd) + ",rootmode=" + rootmode + ",user_id=0,group_id=0,allow_other"
	if err := unix.Mount("stalled", dst, "fuse", 0, opts); err != nil {
		unix.Close(fd)
		prereq.Missing(t, "mount fuse on "+dst+": "+err.Error())
		return func() {}
	}
	var once sync.Once
	hangUp = func() { once.Do(func() { unix.Close(fd) }) }
	t.Cleanup(func() {
		hangUp()
		unix.Unmount(dst, unix.MNT_DETACH)
	})
	return hangUp
}

// Probe returns run(name, f), which runs f and fails the test, with the
// stacks of the goroutines waiting in a syscall, if f has not returned
// within 3 s: an operation waiting on a tenant's stalled FUSE server. Call
// it before the mounts: its cleanup, which waits for every f to end once
// the mounts' cleanups have let them go, must run after theirs.
func Probe(t testing.TB) func(name string, f func() error) {
	t.Helper()
	var ends []chan struct{}
	t.Cleanup(func() {
		for _, e := range ends {
			select {
			case <-e:
			case <-time.After(10 * time.Second):
				t.Error("still waiting after the FUSE connections closed")
			}
		}
	})
	return func(name string, f func() error) {
		t.Helper()
		done, ended := make(chan error, 1), make(chan struct{})
		ends = append(ends, ended)
		go func() { defer close(ended); done <- f() }()
		select {
		case err := <-done:
			t.Logf("%s: %v", name, err)
		case <-time.After(3 * time.Second):
			t.Errorf("%s waited on a tenant's stalled FUSE server:\n%s", name, waitingStacks())
		}
	}
}

// waitingStacks are the stacks of xfsq's goroutines in a syscall.
func waitingStacks() string {
	var b bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&b, 2)
	var out []string
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "syscall") && strings.Contains(g, "xfsq") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}
