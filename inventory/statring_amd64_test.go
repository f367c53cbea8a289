package inventory

import (
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// A ring that cannot be set up for a reason of the moment (memory or
// descriptors short) leaves batching on for the next walk; io_uring
// refused (a seccomp filter's EPERM, ENOSYS) turns it off for good, and
// either way the reason is kept.
func TestRingSetUpFailuresOfTheMomentPass(t *testing.T) {
	saved, missing, why := setUpRing, ringMissing.Load(), ringWhy.Load()
	var pooled []*statRing // the rings kept between walks would answer first
	for len(rings) > 0 {
		pooled = append(pooled, <-rings)
	}
	t.Cleanup(func() {
		setUpRing = saved
		ringMissing.Store(missing)
		ringWhy.Store(why)
		ringLastFailure.Store(nil)
		for _, r := range pooled {
			putRing(r)
		}
	})
	for _, c := range []struct {
		err     error
		refused bool
	}{
		{unix.ENOMEM, false},
		{fmt.Errorf("mapping the rings: %w", unix.EAGAIN), false},
		{unix.EMFILE, false},
		{unix.EPERM, true},
		{unix.ENOSYS, true},
	} {
		ringMissing.Store(false)
		ringWhy.Store(nil)
		setUpRing = func() (*statRing, error) { return nil, c.err }
		if r := getRing(); r != nil || ringRefused() != c.refused || ringGivenUp() == "" {
			t.Errorf("%v: ring %v, refused for good %v (%q), want %v and the reason kept", c.err, r, ringRefused(), ringGivenUp(), c.refused)
		}
	}
}

// What the ring answers is taken only where it is the file's: an answer
// without a field the walk reads (a filesystem that does not fill it) and
// an error that may be the ring's own (ECANCELED where io-wq could not
// start a worker) are asked again of newfstatat (EAGAIN); a file gone
// since getdents is gone. The completions are made by hand here: a kernel
// that leaves a field out cannot be had on demand.
func TestRingAnswersTakenOnlyWhereTheyAreTheFiles(t *testing.T) {
	var head, tail uint32
	r := &statRing{cqHead: &head, cqTail: &tail, cqMask: 7, cqes: make([]ringCQE, 8), out: make([]unix.Statx_t, ringEntries)}
	full := uint32(unix.STATX_BASIC_STATS)
	cases := []struct {
		res  int32
		mask uint32
		want unix.Errno
	}{
		{0, full, 0},
		{0, full &^ unix.STATX_BLOCKS, unix.EAGAIN},
		{0, full &^ unix.STATX_ATIME, unix.EAGAIN},
		{-int32(unix.ENOENT), 0, unix.ENOENT},
		{-int32(unix.ECANCELED), 0, unix.EAGAIN},
		{-int32(unix.ENOMEM), 0, unix.EAGAIN},
	}
	head, tail = 5, 5 // the ring's indices wrap
	for j, c := range cases {
		r.cqes[tail&r.cqMask] = ringCQE{userData: uint64(j), res: c.res}
		r.out[j] = unix.Statx_t{Mask: c.mask, Ino: 42, Nlink: 1, Mode: unix.S_IFREG | 0o644, Blocks: 8}
		tail++
	}
	sts, errs := make([]unix.Stat_t, len(cases)), make([]unix.Errno, len(cases))
	if n, cancelled := r.reap(sts, errs); n != len(cases) || cancelled != 1 || head != tail {
		t.Fatalf("reaped %d of %d (%d cancelled, want 1), head %d tail %d", n, len(cases), cancelled, head, tail)
	}
	for j, c := range cases {
		if errs[j] != c.want {
			t.Errorf("res %d mask %#x: error %v, want %v", c.res, c.mask, errs[j], c.want)
		}
	}
	if sts[0].Ino != 42 || sts[0].Blocks != 8 || sts[0].Mode != unix.S_IFREG|0o644 {
		t.Errorf("the full answer became %+v", sts[0])
	}
}

// A walking thread gets at most ringWorkers io-wq threads for its stats,
// in both of io-wq's classes (IORING_OP_STATX is bounded work): a pids
// limit counts them. The kernel answers a request that changes nothing
// (zeros) with the limits of the asking thread's io-wq.
func TestRingCapsTheIoWqThreadsOfAWalkingThread(t *testing.T) {
	statModes(t)
	dir := t.TempDir()
	fill(t, dir, ringMin, "f%03d")
	runtime.LockOSThread() // the io-wq is this thread's: it ends with it
	r := ringOrWhy()
	if r == nil {
		prereq.Missing(t, "io_uring is missing or refused here ("+ringGivenUp()+"): kernel.io_uring_disabled=0 and no seccomp filter on it")
	}
	defer putRing(r)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	defer unix.Close(fd)
	names := make([]*byte, ringMin)
	for i := range names {
		names[i] = &fmt.Appendf(nil, "f%03d\x00", i)[0]
	}
	sts, errs := make([]unix.Stat_t, ringMin), make([]unix.Errno, ringMin)
	if !r.batch(fd, names, sts, errs, func() {}) { // this thread's io-wq now works for the ring
		t.Fatal("the ring failed")
	}
	var limits [2]uint32 // bounded, unbound
	if _, _, e := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerIOWQMaxWorkers, uintptr(unsafe.Pointer(&limits)), 2, 0, 0); e != 0 {
		prereq.Missing(t, "IORING_REGISTER_IOWQ_MAX_WORKERS: "+e.Error()+" (Linux 5.15)")
	}
	if limits != [2]uint32{ringWorkers, ringWorkers} {
		t.Errorf("io-wq threads at most %d bounded, %d unbound a walking thread; want %d each", limits[0], limits[1], ringWorkers)
	}
}
