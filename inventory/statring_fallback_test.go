package inventory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// ringChildResult is what a walk in a child process (ringChild) found.
type ringChildResult struct {
	Result                   *Result
	MountPoints, SharedBytes uint64 // not in Result's JSON
	Batches                  int64  // directories' batches that went through a ring
}

// ringChild is the child process of the fallback tests, which run the
// test binary again (TestMain) with XFSQ_TEST_RING_CHILD set to how
// io_uring is to be refused to it, and XFSQ_TEST_RING_DIR to the tree to
// walk with BatchStat. It prints what it found and exits.
func ringChild(how, dir string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	switch {
	case strings.HasPrefix(how, "seccomp:"):
		nr, _ := strconv.Atoi(strings.TrimPrefix(how, "seccomp:"))
		if err := refuseSyscall(nr); err != nil {
			fail(err)
		}
	case how == "nproc":
		// No thread may be made from here on: io_uring's io-wq worker
		// threads cannot start. Threads for the runtime are made first.
		warmThreads()
		n := threadCount()
		if err := unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: uint64(n), Max: uint64(n)}); err != nil {
			fail(err)
		}
	}
	machineBusy = func() bool { return true } // batched whatever the load
	res, err := Walk(dir, Options{Depth: 3, TopK: 50, Workers: 1, RawStat: true, BatchStat: true})
	if err != nil {
		fail(err)
	}
	json.NewEncoder(os.Stdout).Encode(ringChildResult{Result: res, MountPoints: res.MountPoints, SharedBytes: res.SharedBytes, Batches: ringBatches.Load()})
	os.Exit(0)
}

// refuseSyscall makes syscall nr fail with EPERM in every thread of the
// process from now on (a seccomp filter, as a container's profile has).
func refuseSyscall(nr int) error {
	const (
		ldAbsW = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeqK   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		retK   = unix.BPF_RET | unix.BPF_K
	)
	filter := []unix.SockFilter{
		{Code: ldAbsW, K: 4}, // seccomp_data.arch
		{Code: jeqK, Jt: 0, Jf: 3, K: unix.AUDIT_ARCH_X86_64},
		{Code: ldAbsW, K: 0}, // seccomp_data.nr
		{Code: jeqK, Jt: 0, Jf: 1, K: uint32(nr)},
		{Code: retK, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		{Code: retK, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))); e != 0 {
		return fmt.Errorf("seccomp: %w", e)
	}
	return nil
}

// warmThreads has the runtime make the threads it will want while
// goroutines block in syscalls, and keep them idle.
func warmThreads() {
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts := unix.Timespec{Nsec: 50e6}
			unix.Syscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
		}()
	}
	wg.Wait()
}

func threadCount() int {
	ents, _ := os.ReadDir("/proc/self/task")
	return len(ents)
}

// ringChildWalk walks base/tree with BatchStat in a child process, run as
// uid from base/walker.test, that io_uring is refused to as how says.
func ringChildWalk(t *testing.T, base, how string, uid int) ringChildResult {
	t.Helper()
	dir := filepath.Join(base, "tree")
	cmd := exec.Command(filepath.Join(base, "walker.test"), "-test.run=^$")
	cmd.Env = append(os.Environ(), "XFSQ_TEST_RING_CHILD="+how, "XFSQ_TEST_RING_DIR="+dir)
	if uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: the child walk failed: %v\n%s", how, err, stderr.Bytes())
	}
	var r ringChildResult
	if err := json.Unmarshal(out, &r); err != nil || r.Result == nil {
		t.Fatalf("%s: the child said %q: %v", how, out, err)
	}
	r.Result.MountPoints, r.Result.SharedBytes = r.MountPoints, r.SharedBytes
	return r
}

// ringFallbackBase is a directory anyone may read, of a copy of the test
// binary (which lives where only root may enter) and a tree: a directory
// of several ring batches and one of a few files.
func ringFallbackBase(t *testing.T) string {
	base, err := os.MkdirTemp("/tmp", "xfsq-ring-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	must(t, os.Chmod(base, 0o755))
	bin, err := os.ReadFile(os.Args[0])
	must(t, err)
	must(t, os.WriteFile(filepath.Join(base, "walker.test"), bin, 0o755))
	dir := filepath.Join(base, "tree")
	for _, d := range []string{"", "many", "few"} {
		must(t, os.Mkdir(filepath.Join(dir, d), 0o755))
	}
	fill(t, filepath.Join(dir, "many"), 700, "file-%04d")
	fill(t, filepath.Join(dir, "few"), 3, "f%d")
	return base
}

// Where io_uring is refused (a seccomp profile that refuses setting up a
// ring, asking what it can do, or entering it; a walking process whose
// user may start no more threads, so that the kernel's io-wq workers
// cannot start), a batched walk stats one file at a time and stays exact:
// the same figures as a walk that never asked for the ring, no errors,
// and no batch answered through a ring.
func TestBatchStatFallsBackWhereIoUringIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		prereq.Missing(t, "needs root: the children run as another user")
	}
	if len(statModes(t)) < 3 {
		prereq.Missing(t, "io_uring is missing or refused here ("+ringGivenUp()+"): kernel.io_uring_disabled=0 and no seccomp filter on it")
	}
	base := ringFallbackBase(t)
	want, err := Walk(filepath.Join(base, "tree"), Options{Depth: 3, TopK: 50, RawStat: true})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		how     string
		uid     int
		batches string // whether batches went through the ring: "yes", "no", "" either
	}{
		{"none", 0, "yes"},
		{"seccomp:" + strconv.Itoa(unix.SYS_IO_URING_SETUP), 0, "no"},
		{"seccomp:" + strconv.Itoa(unix.SYS_IO_URING_REGISTER), 0, "no"},
		{"seccomp:" + strconv.Itoa(unix.SYS_IO_URING_ENTER), 0, "no"},
		// An unused uid: its processes are the child's alone. Once a whole
		// batch came back cancelled the ring is given up: every batch
		// would wait for io-wq's retries to start a worker (~50 ms here).
		{"nproc", 54321, "no"},
	}
	for _, c := range cases {
		t.Run(c.how, func(t *testing.T) {
			got := ringChildWalk(t, base, c.how, c.uid)
			if got.Result.Errors != 0 || !sameWalk(got.Result, want) {
				t.Errorf("errors %d\n%+v\nwant %+v", got.Result.Errors, got.Result.Root, want.Root)
			}
			if c.batches != "" && (c.batches == "yes") != (got.Batches > 0) {
				t.Errorf("%d batches went through the ring", got.Batches)
			}
		})
	}
}
