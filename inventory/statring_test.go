package inventory

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// statModes are the ways a walk makes its stats: one syscall a file
// through the scheduler, raw, and raw with a directory's files batched
// through io_uring (as on a busy machine, which it makes every walk of t) (where io_uring is missing: a failure in CI, else the
// batched mode is left out).
func statModes(t *testing.T) []Options {
	t.Helper()
	busy := machineBusy
	machineBusy = func() bool { return true } // batched whatever the load
	t.Cleanup(func() { machineBusy = busy })
	modes := []Options{{}, {RawStat: true}, {RawStat: true, BatchStat: true}}
	if r := ringOrWhy(); r != nil {
		putRing(r)
	} else if prereq.InCI() {
		t.Fatalf("io_uring is missing or refused here (%s): the batched stats cannot be tested", ringGivenUp())
	} else {
		t.Logf("io_uring is missing or refused here (%s): batched stats not tested", ringGivenUp())
		modes = modes[:2]
	}
	return modes
}

// ringOrWhy is a ring, asked again for a few seconds while setting one up
// fails for a passing reason (a loaded machine short of memory for a
// moment); nil once io_uring is refused for good or it never passes.
func ringOrWhy() *statRing {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if r := getRing(); r != nil || ringRefused() || time.Now().After(deadline) {
			return r
		}
	}
}

func statModeName(o Options) string {
	switch {
	case o.BatchStat:
		return "BatchStat"
	case o.RawStat:
		return "RawStat"
	}
	return "Syscall"
}

// The ring's answer is newfstatat's, field for field, for every kind of
// entry a tenant can make (and a device node, which only root can), and
// its errors are the same errors.
func TestRingStatsAsNewfstatat(t *testing.T) {
	statModes(t)
	r := ringOrWhy()
	if r == nil {
		prereq.Missing(t, "io_uring is missing or refused here ("+ringGivenUp()+"): kernel.io_uring_disabled=0 and no seccomp filter on it")
	}
	defer putRing(r)
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "file"), make([]byte, 100_000), 0o640))
	must(os.Link(filepath.Join(dir, "file"), filepath.Join(dir, "hardlink")))
	must(os.Symlink("/etc/passwd", filepath.Join(dir, "symlink")))
	must(os.Symlink("nowhere", filepath.Join(dir, "dangling")))
	must(unix.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	must(os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	names := []string{"file", "hardlink", "symlink", "dangling", "fifo", "sub", "gone"}
	if os.Geteuid() == 0 {
		must(unix.Mknod(filepath.Join(dir, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
		names = append(names, "null")
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(err)
	defer unix.Close(fd)
	cnames := make([]*byte, len(names))
	for i, n := range names {
		cnames[i] = &append([]byte(n), 0)[0]
	}
	sts := make([]unix.Stat_t, len(names))
	errs := make([]unix.Errno, len(names))
	// Every name through the ring (batch), none by the thread itself.
	if !r.batch(fd, cnames, sts, errs, func() {}) {
		t.Fatal("the ring failed")
	}
	for i, n := range names {
		var want unix.Stat_t
		werr := unix.Fstatat(fd, n, &want, unix.AT_SYMLINK_NOFOLLOW)
		var wantErr unix.Errno
		if werr != nil {
			wantErr = werr.(syscall.Errno)
		}
		if errs[i] != wantErr {
			t.Errorf("%s: error %v, newfstatat's %v", n, errs[i], wantErr)
			continue
		}
		if wantErr == 0 && sts[i] != want {
			t.Errorf("%s:\n ring       %+v\n newfstatat %+v", n, sts[i], want)
		}
	}
}

// BatchStat batches only on a busy machine: on a quiet one a walk makes
// one newfstatat a file, as without it.
func TestBatchStatOnlyWhenTheMachineIsBusy(t *testing.T) {
	statModes(t)
	dir := t.TempDir()
	for i := range 3 * ringMin {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, busy := range []bool{false, true} {
		machineBusy = func() bool { return busy }
		before := ringBatches.Load()
		res, err := Walk(dir, Options{RawStat: true, BatchStat: true})
		if err != nil || res.Root.Files != 3*ringMin {
			t.Fatalf("busy=%v: %v, %+v", busy, err, res)
		}
		if batched := ringBatches.Load() > before; batched != busy {
			t.Errorf("machine busy %v: batched %v", busy, batched)
		}
	}
}
