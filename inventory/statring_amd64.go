package inventory

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/nomount"
)

// A statRing stats a directory's files in batches through io_uring
// (IORING_OP_STATX): one io_uring_enter a batch instead of one newfstatat
// a file. The lookups are the kernel's same path (statx on the name,
// relative to the directory's descriptor, never following a symlink); what
// a batch saves is the transitions into and out of the kernel, which on a
// virtual machine's guest are a fifth of a warm walk's CPU
// (docs/notes/walker-profile.md). The kernel runs each statx on an io-wq
// thread of the submitting thread (it forces them async), so the files of
// a directory are stat'ed while the walk's own thread waits.
//
// Where io_uring is missing or refused (a kernel before 5.6, the
// kernel.io_uring_disabled sysctl, a seccomp profile), the walk stats one
// file at a time as before (ringMissing).
type statRing struct {
	fd       int
	sqHead   *uint32 // advanced by the kernel as it takes entries
	sqTail   *uint32 // advanced by us
	sqMask   uint32
	sqArray  []uint32
	sqes     []ringSQE
	cqHead   *uint32 // advanced by us
	cqTail   *uint32 // advanced by the kernel
	cqMask   uint32
	cqes     []ringCQE
	out      []unix.Statx_t // the kernel writes here until each entry's completion
	mappings [][]byte
}

// ringEntries is a ring's size and the largest batch: a 32 KiB getdents
// buffer holds at most ~1,300 names, so a directory's files are a few
// batches at most.
const ringEntries = 256

const (
	opStatx                = 21 // IORING_OP_STATX
	enterGetEvents         = 1  // IORING_ENTER_GETEVENTS
	registerProbe          = 8  // IORING_REGISTER_PROBE
	registerIOWQMaxWorkers = 19 // IORING_REGISTER_IOWQ_MAX_WORKERS
	probeOpSupported       = 1  // IO_URING_OP_SUPPORTED
	offSQRing              = 0
	offCQRing              = 0x8000000
	offSQEs                = 0x10000000
	featSingleMmap         = 1 // IORING_FEAT_SINGLE_MMAP
)

// struct io_uring_params and its offsets, as <linux/io_uring.h> has them.
type ringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sq                                                                     struct {
		head, tail, mask, entries, flags, dropped, array, resv1 uint32
		userAddr                                                uint64
	}
	cq struct {
		head, tail, mask, entries, overflow, cqes, flags, resv1 uint32
		userAddr                                                uint64
	}
}

// struct io_uring_sqe, as IORING_OP_STATX reads it.
type ringSQE struct {
	opcode, flags uint8
	ioprio        uint16
	fd            int32  // the directory
	addr2         uint64 // struct statx *
	addr          uint64 // the name
	len           uint32 // the statx mask
	statxFlags    uint32
	userData      uint64
	bufIndex      uint16
	personality   uint16
	spliceFdIn    int32
	addr3, pad    uint64
}

type ringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

var (
	ringMissing atomic.Bool
	// ringWhy is why the ring was given up (the first reason): walks need
	// not know, tests and a curious operator's debugger do.
	ringWhy atomic.Pointer[string]
	// rings are kept between walks: a snapshot pass walks thousands of
	// small trees, and a ring's setup is three syscalls and two mappings.
	rings = make(chan *statRing, 16)
	// brokenRings keeps a ring whose entries may still be in the kernel's
	// hands after an error: the kernel may yet write into its buffers, so
	// they are never freed. (Before Linux 5.18 such an entry may also read
	// its name late, from a getdents buffer read again since: it stats
	// another name, into a buffer nobody reads.)
	brokenMu    sync.Mutex
	brokenRings []*statRing
	// ringBatches counts the batches stat'ed through a ring: a test holds
	// that a walk where io_uring works uses it.
	ringBatches atomic.Int64
)

// getRing is a ring to use, or nil where io_uring is missing.
func getRing() *statRing {
	if ringMissing.Load() {
		return nil
	}
	select {
	case r := <-rings:
		return r
	default:
	}
	r, err := setUpRing()
	switch {
	case err == nil:
		return r
	case transient(err):
		// Memory or descriptors short for a moment: this walk stats one
		// file at a time, the next one asks again.
		why := "setting up a ring: " + err.Error()
		ringLastFailure.Store(&why)
	default:
		giveUpRing("setting up a ring: " + err.Error())
	}
	return nil
}

// setUpRing is newRing; tests make it fail.
var setUpRing = newRing

// ringLastFailure is why the last ring could not be set up, where that
// may pass (ringWhy is for good).
var ringLastFailure atomic.Pointer[string]

// transient: an error of the moment, not io_uring refused.
func transient(err error) bool {
	for _, e := range []unix.Errno{unix.ENOMEM, unix.EAGAIN, unix.EINTR, unix.EMFILE, unix.ENFILE} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// giveUpRing makes every later walk stat one file at a time, for why.
func giveUpRing(why string) {
	ringWhy.CompareAndSwap(nil, &why)
	ringMissing.Store(true)
}

// ringRefused: walks no longer ask for a ring (ringGivenUp says why).
func ringRefused() bool { return ringMissing.Load() }

// ringGivenUp says why walks no longer batch their stats, or why the
// last ring could not be set up ("" when neither happened).
func ringGivenUp() string {
	if w := ringWhy.Load(); w != nil {
		return *w
	}
	if w := ringLastFailure.Load(); w != nil {
		return *w + " (may pass)"
	}
	return ""
}

func putRing(r *statRing) {
	if r == nil {
		return
	}
	select {
	case rings <- r:
	default:
		r.close()
	}
}

func newRing() (*statRing, error) {
	var p ringParams
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, ringEntries, uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, e
	}
	r := &statRing{fd: int(fd), out: make([]unix.Statx_t, ringEntries)}
	if err := r.probeStatx(); err != nil {
		r.close()
		return nil, err
	}
	if err := r.mapRings(&p); err != nil {
		r.close()
		return nil, err
	}
	r.capWorkers()
	return r, nil
}

// ringWorkers caps the kernel's io-wq threads a walking thread gets for a
// ring's stats: their default is one a ring entry up to four a CPU for
// every thread that submits, threads a pids limit counts. A walk's
// parallelism is its own workers; each needs one io-wq thread busy while
// it waits for its batch, and a second for the next batch's start. On a
// busy machine (the only one a walk batches on) two stat a 200,000-file
// tree as fast as eight did (docs/notes/walker-profile.md).
const ringWorkers = 2

// capWorkers applies ringWorkers (IORING_REGISTER_IOWQ_MAX_WORKERS, Linux
// 5.15; an older kernel keeps its default, which is only more threads) to
// both of io-wq's classes. IORING_OP_STATX is bounded work: it names no
// file, so io_uring never marks it unbound (only ops on a file that is
// not a regular one are), and a cap on the unbound class alone left eight
// threads a walking thread on a two-CPU machine.
func (r *statRing) capWorkers() {
	limits := [2]uint32{ringWorkers, ringWorkers} // bounded, unbound
	unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerIOWQMaxWorkers, uintptr(unsafe.Pointer(&limits)), 2, 0, 0)
}

// probeStatx fails unless the kernel knows IORING_OP_STATX (Linux 5.6).
func (r *statRing) probeStatx() error {
	var probe struct {
		lastOp, opsLen uint8
		resv           uint16
		resv2          [3]uint32
		ops            [64]struct {
			op, resv uint8
			flags    uint16
			resv2    uint32
		}
	}
	_, _, e := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerProbe, uintptr(unsafe.Pointer(&probe)), uintptr(len(probe.ops)), 0, 0)
	if e != 0 {
		return e
	}
	if probe.lastOp < opStatx || probe.ops[opStatx].flags&probeOpSupported == 0 {
		return unix.EOPNOTSUPP
	}
	return nil
}

func (r *statRing) mapRings(p *ringParams) error {
	if p.features&featSingleMmap == 0 {
		return unix.EOPNOTSUPP // Linux before 5.4, which has no IORING_OP_STATX either
	}
	size := max(int(p.sq.array+p.sqEntries*4), int(p.cq.cqes+p.cqEntries*uint32(unsafe.Sizeof(ringCQE{}))))
	rm, err := unix.Mmap(r.fd, offSQRing, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return err
	}
	r.mappings = append(r.mappings, rm)
	sm, err := unix.Mmap(r.fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(ringSQE{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return err
	}
	r.mappings = append(r.mappings, sm)
	base := unsafe.Pointer(&rm[0])
	at := func(off uint32) *uint32 { return (*uint32)(unsafe.Add(base, off)) }
	r.sqHead, r.sqTail, r.sqMask = at(p.sq.head), at(p.sq.tail), *at(p.sq.mask)
	r.sqArray = unsafe.Slice(at(p.sq.array), p.sqEntries)
	r.cqHead, r.cqTail, r.cqMask = at(p.cq.head), at(p.cq.tail), *at(p.cq.mask)
	r.cqes = unsafe.Slice((*ringCQE)(unsafe.Add(base, p.cq.cqes)), p.cqEntries)
	r.sqes = unsafe.Slice((*ringSQE)(unsafe.Pointer(&sm[0])), p.sqEntries)
	return nil
}

func (r *statRing) close() {
	for _, m := range r.mappings {
		unix.Munmap(m)
	}
	unix.Close(r.fd)
}

// statx flags: as newfstatat with statFlags, which never automounts
// either.
const (
	ringStatxFlags = statFlags | unix.AT_NO_AUTOMOUNT
	ringStatxMask  = unix.STATX_BASIC_STATS
	// ringStatxNeed are the fields a walk reads: an answer without them is
	// asked again with newfstatat.
	ringStatxNeed = unix.STATX_TYPE | unix.STATX_MODE | unix.STATX_NLINK | unix.STATX_INO | unix.STATX_SIZE | unix.STATX_BLOCKS | unix.STATX_MTIME | unix.STATX_CTIME | unix.STATX_ATIME
)

// stat stats each of names (NUL-terminated, relative to dirfd) into sts,
// errs[i] its error: 0 none, ENOENT gone, EAGAIN for the caller to ask
// newfstatat (an answer without a field the walk reads, any other error).
// Of each batch the ring takes the first ringShare while this thread
// stats the rest itself (inline(i): names[i] into sts[i] and errs[i]): a
// thread that only waited for its batch slept and was woken once a batch,
// which on an idle virtual CPU cost more than the transitions the ring
// saves; with the thread busy meanwhile the ring's answers are mostly in
// when it looks. ok false: the ring failed or the kernel cancelled a whole
// batch, and it is no longer used; the names it did not answer have
// errs[i] = EAGAIN too.
func (r *statRing) stat(dirfd int, names []*byte, sts []unix.Stat_t, errs []unix.Errno, inline func(i int)) (ok bool) {
	for i := range errs {
		errs[i] = unix.EAGAIN // until answered
	}
	for i := 0; i < len(names); i += ringEntries {
		n := min(ringEntries, len(names)-i)
		k := max(1, n*ringShare/100)
		if !r.batch(dirfd, names[i:i+k], sts[i:i+k], errs[i:i+k], func() {
			for j := i + k; j < i+n; j++ {
				inline(j)
			}
		}) {
			return false
		}
	}
	return true
}

// ringShare is the percentage of a batch the ring takes (the rest the
// walking thread): measured on the build machine, two threads over the
// 200k tree's files in batches of 50, quiet: 60 % 334 ms, 75 % 311 ms,
// 90 % 366 ms, all in the ring 435 ms, none (newfstatat) 390 ms (medians
// of 10, wall; CPU in the same order).
const ringShare = 75

// batch stats up to ringEntries names through the ring, running meanwhile
// (after they are submitted) what the thread does itself, then waiting for
// every answer.
func (r *statRing) batch(dirfd int, names []*byte, sts []unix.Stat_t, errs []unix.Errno, meanwhile func()) bool {
	tail := *r.sqTail
	for j, name := range names {
		idx := (tail + uint32(j)) & r.sqMask
		r.sqes[idx] = ringSQE{opcode: opStatx, fd: int32(dirfd), addr: uint64(uintptr(unsafe.Pointer(name))),
			addr2: uint64(uintptr(unsafe.Pointer(&r.out[j]))), len: ringStatxMask, statxFlags: ringStatxFlags, userData: uint64(j)}
		r.sqArray[idx] = idx
	}
	end := tail + uint32(len(names))
	atomic.StoreUint32(r.sqTail, end)
	// Submitted without waiting; what the kernel has not taken of a batch
	// (sqHead) is submitted again after a signal.
	for atomic.LoadUint32(r.sqHead) != end {
		_, _, e := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(end-atomic.LoadUint32(r.sqHead)), 0, 0, 0, 0)
		if e != 0 && e != unix.EINTR && e != unix.EAGAIN && e != unix.EBUSY {
			r.abandon("io_uring_enter: " + e.Error())
			return false
		}
	}
	meanwhile()
	got, cancelled := r.reap(sts, errs)
	for got < len(names) {
		_, _, e := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), 0, uintptr(len(names)-got), enterGetEvents, 0, 0)
		if e != 0 && e != unix.EINTR && e != unix.EAGAIN && e != unix.EBUSY {
			r.abandon("io_uring_enter: " + e.Error())
			return false
		}
		n, c := r.reap(sts, errs)
		got, cancelled = got+n, cancelled+c
	}
	// Since Linux 5.18 the kernel copies a name as it takes the entry;
	// before, the io-wq thread read it from the caller's memory when it
	// ran the entry: the names must live until every answer is in.
	runtime.KeepAlive(names)
	if cancelled == len(names) {
		// The kernel could not start an io-wq worker (the process at its
		// pids limit), retried, and cancelled every entry: each batch
		// would wait as long (~50 ms). Nothing is in flight: it is closed.
		giveUpRing("every entry of a batch cancelled: the kernel could not start an io-wq worker")
		r.close()
		return false
	}
	ringBatches.Add(1)
	return true
}

// reap takes the answers in the completion queue: n of them, cancelled
// of which the kernel cancelled.
func (r *statRing) reap(sts []unix.Stat_t, errs []unix.Errno) (n, cancelled int) {
	head, tail := atomic.LoadUint32(r.cqHead), atomic.LoadUint32(r.cqTail)
	for ; head != tail; head++ {
		c := r.cqes[head&r.cqMask]
		j := int(c.userData)
		switch sx := &r.out[j]; {
		case c.res == -int32(unix.ENOENT):
			errs[j] = unix.ENOENT // gone since getdents
		case c.res < 0:
			// Maybe the ring's error, not the file's: ECANCELED where
			// the kernel could not start an io-wq worker (a pids limit),
			// EAGAIN, ENOMEM. newfstatat says which.
			errs[j] = unix.EAGAIN
			if c.res == -int32(unix.ECANCELED) {
				cancelled++
			}
		case sx.Mask&ringStatxNeed != ringStatxNeed:
			errs[j] = unix.EAGAIN // asked again one by one
		default:
			sts[j] = nomount.FromStatx(sx)
			errs[j] = 0
		}
		n++
	}
	atomic.StoreUint32(r.cqHead, head)
	return n, cancelled
}

// abandon gives up a ring the kernel may still write into.
func (r *statRing) abandon(why string) {
	giveUpRing(why)
	brokenMu.Lock()
	brokenRings = append(brokenRings, r)
	brokenMu.Unlock()
}
