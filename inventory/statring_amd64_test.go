package inventory

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
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
