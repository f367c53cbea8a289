// Package inventory measures directory trees the way du does — allocated
// and apparent bytes, files and directories, newest mtime, hard links once,
// symlinks not followed, mount points not entered — aggregated to a depth,
// with the largest sub-paths and files, in one parallel pass.
//
// Memory is bounded by the aggregate (nodes to the depth, top-K of each,
// the top-K files, and the inodes that have more than one link), never by
// the number of files. It only reads: it must never open a file's content,
// follow a symlink or leave the filesystem the walk started on.
//
// Measure is the one measure of an entry's usage (the fallback backend's,
// a removal's credit to the ledger). Background priority is
// per thread and chosen by the caller (Background): it must never lower
// the priority of the whole process.
package inventory

import (
	"bytes"
	"cmp"
	"container/heap"
	"errors"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/nomount"
)

// Options bound a walk. Zero values take the defaults.
type Options struct {
	Depth int // aggregate to this depth below the root: default 3, at most 8
	TopK  int // children kept per node and top files: default 20
	// Workers is how many goroutines may walk at once: default 2 ×
	// GOMAXPROCS, at least 4, for more reads in flight when the tree is not
	// in the kernel's caches. With RawStat only GOMAXPROCS of them start;
	// the rest join once coldToJoin directories came from the disk (on a
	// warm tree they only made the running ones hand them work: ~2 % of
	// the walk).
	Workers int
	Budget  time.Duration // stop descending after this long and mark the result partial; 0: none
	// Progress, if set, is called about every 200ms with the running totals,
	// and once more with the final ones.
	Progress func(Progress)
	// RawStat makes the syscalls of directories that the kernel answers
	// from its caches raw syscalls, unseen by the Go scheduler: a warm walk
	// needs ~10 % less CPU and no thread hand-offs. A raw syscall that does
	// block (a failing disk) holds its thread's P until it returns, which
	// can stall every other goroutine and the garbage collector. Only for a
	// process with nothing else to run (the CLI), never for a server.
	RawStat bool
	// BatchStat stats a directory's files in batches through io_uring
	// where the kernel allows it (statring_amd64.go), when the machine is
	// busy as the walk starts (its load average at least twice its CPUs,
	// machineBusy). Measured on the build machine (docs/benchmarks.md):
	// with other work running a 200,000-file snapshot took a quarter of
	// the wall time one syscall a file took, since the kernel's io-wq
	// threads stat while the walk's threads wait for a CPU; on a quiet
	// machine it took ~15 % longer (the wake-ups of those threads cost
	// more than the transitions saved). io-wq threads are made from the
	// walking thread and do not follow a later change of its priority:
	// ignored with Background.
	BatchStat bool
	// Background lowers each worker's thread to background priority (see
	// LowerThread), for a walk that Background runs: the workers are
	// goroutines of their own, on threads of their own.
	Background bool
	// Writing names the regular files at the root that are writes in
	// progress through xfsq (their temporary names, where the filesystem
	// has no O_TMPFILE), each with its inode and the room its reservation
	// holds. That inode at that name, of a single link and no larger than
	// the room, is not counted: its reservation counts it. Anything else
	// there (a tenant's file renamed onto the name, one larger, one linked
	// elsewhere) is counted as any file.
	Writing  map[string]InProgress
	onWorker func() // tests: called on each worker's goroutine as it starts
}

// InProgress is one write in progress in Options.Writing.
type InProgress struct{ Ino, Room uint64 }

// MaxDepth is the deepest aggregation a walk keeps.
const MaxDepth = 8

// Progress is the running count of a walk.
type Progress struct {
	Files, Bytes uint64
	Dirs         uint64 // directories seen below the root, which the kernel counts as inodes too
	Elapsed      time.Duration
}

// Node is one directory's totals, with its largest children to the depth.
type Node struct {
	Path          string    `json:"path"` // relative to the walk's root; "." is the root
	SizeBytes     uint64    `json:"size_bytes"`
	ApparentBytes uint64    `json:"apparent_bytes"`
	Files         uint64    `json:"total_files"`
	Dirs          uint64    `json:"total_dirs"`
	Mtime         time.Time `json:"newest_modified_at"` // newest in the subtree
	Children      []*Node   `json:"children,omitempty"`
	// LastUse is the newest use in the subtree (see LastUse): what a
	// cache's entries age by. Not printed or stored: the sweep reads it.
	LastUse time.Time `json:"-"`
}

// File is one of the largest files.
type File struct {
	Path      string `json:"path"`
	SizeBytes uint64 `json:"size_bytes"`
}

// Result is a walk of one tree.
type Result struct {
	Root     *Node         `json:"root"`
	TopFiles []File        `json:"top_files"`
	Partial  bool          `json:"partial"` // the budget ran out; totals cover what was seen
	Errors   uint64        `json:"errors"`  // entries that could not be read or vanished
	Duration time.Duration `json:"-"`
	// DurationSeconds is Duration for JSON, which counts time in seconds (docs/design/README.md#output-conventions).
	DurationSeconds float64 `json:"duration_seconds"`
	// SharedBytes and SharedFiles are the part of the totals held by files
	// that also have links outside the tree: deleting the tree leaves them.
	SharedBytes uint64 `json:"-"`
	SharedFiles uint64 `json:"-"`
	// MountPoints counts the entries the walk did not enter or count
	// because another filesystem is mounted on them: what the tree's own
	// filesystem holds beneath them is not in the totals. A walk through a
	// copy of the mount without its submounts (saferm.Beneath) meets none.
	MountPoints uint64 `json:"-"`
	// Changed counts the directories changed since the walk began when it
	// read them (an entry added, removed or renamed in them, or they were
	// moved): a directory a tenant moves from one not read yet into one
	// read already is in neither when the walk reads them, and the walk
	// misses it without an error. The source changed, and is read after
	// the move, so a walk with none changed missed nothing so; one with
	// some may have, and its figure is a floor.
	Changed uint64 `json:"-"`
}

type walker struct {
	opts    Options
	rootDev uint64
	batch   bool // BatchStat, the machine busy: the workers take rings
	// entryInosDiffer: the filesystem's directory entries need not give
	// the inode number fstat gives (overlayfs), so they are not compared.
	entryInosDiffer bool
	// endMark: the filesystem marks the end of a directory in the last
	// record's d_off (endOfExt4Dir), so the read that would return 0 is
	// not made.
	endMark  bool
	deadline time.Time

	// Work is shared through a stack that idle workers wait on; a busy
	// worker keeps its own directories and gives one away only while
	// another worker waits, so the workers rarely meet.
	mu      sync.Mutex
	wake    sync.Cond
	shared  []job
	waiting atomic.Int32 // workers waiting in take: changed under the lock, read without it too
	done    bool
	started int            // workers started, up to opts.Workers
	running sync.WaitGroup // the started workers
	cold    atomic.Int64   // directories read from the disk: at coldToJoin, every worker is wanted

	linkMu sync.Mutex
	links  map[[2]uint64]*linkSeen // inodes with more than one link, counted at their first sighting

	topMu sync.Mutex
	top   topK[File]

	errors, files, dirs, bytes atomic.Uint64
	mountPoints, changed       atomic.Uint64
	// changedAfter is the ctime (ns) past which a directory read changed
	// since the walk began: its start less a tick of the kernel's coarse
	// clock, which stamps ctimes up to a tick behind (a move in the walk's
	// first tick would look older, and two directories read in that tick
	// are where a small tree's move hides). A change in the tick before
	// the walk counts too: such a walk's figure is a floor, the safe side.
	changedAfter int64
	partial      atomic.Bool
}

// job is a subdirectory not opened yet.
type job struct {
	parent *openDirectory
	name   string // NUL-terminated, for the kernel
	ino    uint64 // the inode number its parent's entry gave it
	rel    string
	depth  int
	acc    *agg // its parent's totals: to the depth, its parent's own; below, the deepest ancestor's
}

// openDirectory is a directory whose subdirectories are still to be opened
// relative to it: the last of its jobs to do so closes it. The open
// descriptors are those of the directories on the workers' stacks.
type openDirectory struct {
	fd   int
	dev  uint64 // its st_dev, the guess for its subdirectories' (read)
	refs atomic.Int32
	warm bool
}

func (d *openDirectory) release() {
	if d.refs.Add(-1) == 0 {
		closeFd(d.fd, d.warm)
	}
}

// Walk measures the tree at dir.
func Walk(dir string, opts Options) (*Result, error) {
	start := time.Now()
	if opts.Depth <= 0 {
		opts.Depth = 3
	}
	opts.Depth = min(opts.Depth, MaxDepth)
	if opts.TopK <= 0 {
		opts.TopK = 20
	}
	if opts.Workers <= 0 {
		opts.Workers = max(4, 2*runtime.GOMAXPROCS(0))
	}
	fd, err := openTreeDir(dir)
	if err != nil {
		return nil, err
	}
	return walkFd(fd, dir, opts, start)
}

// openTreeDir opens the directory dir for a walk: through no symlink at
// its last name, so an entry swapped for a symlink between a check and a
// walk (the sweeper's re-check) cannot lead the walk out of the tree, and
// into no mount there, so a tenant's filesystem mounted on it (a FUSE
// server that never answers) is refused before it is asked anything.
func openTreeDir(dir string) (int, error) {
	fd, err := nomount.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY)
	var st unix.Stat_t
	switch {
	case err == nil:
		return fd, nil
	case errors.Is(err, unix.EXDEV):
		err = errors.New("another filesystem is mounted on it: walks never enter one")
	case (errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR)) && // which one depends on the flags' order of checks
		nomount.Lstat(unix.AT_FDCWD, dir, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK:
		err = errors.New("is a symlink: walks never follow one")
	}
	return -1, &os.PathError{Op: "open", Path: dir, Err: err}
}

// WalkFile measures the tree of the directory open as f (opened through
// an os.Root, say, so no name on the way to it was followed out of the
// root). f stays open and is the caller's to close.
func WalkFile(f *os.File, opts Options) (*Result, error) {
	start := time.Now()
	if opts.Depth <= 0 {
		opts.Depth = 3
	}
	opts.Depth = min(opts.Depth, MaxDepth)
	if opts.TopK <= 0 {
		opts.TopK = 20
	}
	if opts.Workers <= 0 {
		opts.Workers = max(4, 2*runtime.GOMAXPROCS(0))
	}
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "dup", Path: f.Name(), Err: err}
	}
	return walkFd(fd, f.Name(), opts, start)
}

// walkFd walks the directory open as fd (closed by the walk) named dir.
func walkFd(fd int, dir string, opts Options, start time.Time) (*Result, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: dir, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		unix.Close(fd)
		return nil, &os.PathError{Op: "walk", Path: dir, Err: unix.ENOTDIR}
	}
	w := &walker{opts: opts, rootDev: st.Dev, links: map[[2]uint64]*linkSeen{}, changedAfter: changedAfter(start, &st)}
	w.batch = opts.BatchStat && !opts.Background && machineBusy()
	w.entryInosDiffer, w.endMark = filesystemTraits(fd)
	w.wake.L = &w.mu
	if opts.Budget > 0 {
		w.deadline = start.Add(opts.Budget)
	}
	stop := make(chan struct{})
	if opts.Progress != nil {
		go func() {
			t := time.NewTicker(200 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					opts.Progress(Progress{Files: w.files.Load(), Dirs: w.dirs.Load(), Bytes: w.bytes.Load(), Elapsed: time.Since(start)})
				}
			}
		}()
	}
	root := &agg{node: &Node{Path: "."}}
	root.pending.Store(1)
	root.addInode(&st, true)
	// The root is read before the workers start: its subdirectories are
	// their first shared jobs.
	first := newWorker(w)
	first.read(fd, &st, st.Dev, st.Ino, ".", 0, root, true)
	w.shared, first.stack = first.stack, nil
	w.offerTop(first.top)
	first.done()
	w.mu.Lock()
	if opts.RawStat && w.cold.Load() < coldToJoin {
		w.startWorkers(min(opts.Workers, runtime.GOMAXPROCS(0)))
	} else {
		w.startWorkers(opts.Workers)
	}
	w.mu.Unlock()
	w.running.Wait()
	close(stop)
	if opts.Progress != nil { // the final totals, however short the walk
		opts.Progress(Progress{Files: w.files.Load(), Dirs: w.dirs.Load(), Bytes: w.bytes.Load(), Elapsed: time.Since(start)})
	}
	res := &Result{Root: root.node, Partial: w.partial.Load(), Errors: w.errors.Load(), MountPoints: w.mountPoints.Load(), Changed: w.changed.Load(), Duration: time.Since(start)}
	res.DurationSeconds = res.Duration.Seconds()
	res.TopFiles = w.top.best()
	for _, l := range w.links {
		if l.seen < l.nlink {
			res.SharedBytes += l.size
			res.SharedFiles++
		}
	}
	return res, nil
}

// coarseTick is the resolution of the clock the kernel stamps ctimes with.
var coarseTick = func() time.Duration {
	var ts unix.Timespec
	if unix.ClockGetres(unix.CLOCK_REALTIME_COARSE, &ts) != nil || ts.Nano() <= 0 {
		return 10 * time.Millisecond // HZ=100, the coarsest
	}
	return time.Duration(ts.Nano())
}()

// changedAfter is the ctime past which a directory read by a walk that
// began at start changed since: start less a tick of the coarse clock. On
// a filesystem that keeps whole seconds (ext4 with 128-byte inodes, ext3),
// which the walk's root tells by a ctime and an mtime both on the second,
// a change during the walk may be stamped up to a second before its
// start: any ctime in start's second counts then.
func changedAfter(start time.Time, root *unix.Stat_t) int64 {
	if root.Ctim.Nsec == 0 && root.Mtim.Nsec == 0 {
		return start.Truncate(time.Second).UnixNano() - 1
	}
	return start.UnixNano() - coarseTick.Nanoseconds()
}

// changedSince counts the directory st if it changed since the walk began.
func (w *walker) changedSince(st *unix.Stat_t) {
	if st.Ctim.Nano() > w.changedAfter {
		w.changed.Add(1)
	}
}

// openat2Missing is set once the kernel said ENOSYS (before 5.6): walks
// then open with openat, and tell a mount point after opening it.
var openat2Missing atomic.Bool

// filesystemTraits reports what the walk must know of the filesystem of
// fd, which is every directory's: the walk never leaves its mount.
// entryInosDiffer: its directory entries may give another inode number
// than fstat of what they name (overlayfs does for a merged directory).
// endMark: it is ext4, whose end of a directory is in the last record's
// d_off (endOfExt4Dir).
func filesystemTraits(fd int) (entryInosDiffer, endMark bool) {
	var fs unix.Statfs_t
	if unix.Fstatfs(fd, &fs) != nil {
		return true, false
	}
	return fs.Type == unix.OVERLAYFS_SUPER_MAGIC, fs.Type == unix.EXT4_SUPER_MAGIC
}

// endOfExt4Dir is the position ext4 gives a directory read to its end
// (EXT4_HTREE_EOF_64BIT): getdents64 stores the position after its last
// record in that record's d_off, and ext4 answers a read from there with
// 0 and nothing else. No entry has it (ext4fs_dirhash never gives that
// hash), so a read cut short (a full buffer, a pending signal) leaves the
// position of the entry it stopped before, never this one. A directory
// ext4 reads linearly (no dir_index) has byte offsets there, which never
// come near it: it is read to the 0 as on any filesystem.
const endOfExt4Dir = 1<<63 - 1

// statFlags are how a walk stats an entry: never through a symlink, and
// never asking the filesystem for attributes fresher than those it holds
// (AT_STATX_DONT_SYNC). A file can be a mount point, of a tenant's FUSE
// filesystem (fusermount mounts over a file) or NFS, whose server may never
// answer; the attributes of its root that the kernel holds tell the walk
// to leave it out (a device of its own). Local filesystems, the walk's, are
// always current; on a network filesystem an attribute may be as old as
// its cache allows, which a lookup the walk makes refreshes.
const statFlags = unix.AT_SYMLINK_NOFOLLOW | unix.AT_STATX_DONT_SYNC

// mountRootAt reports whether name in dirfd (dirfd itself when name is
// nil) is the root of a mount. Only asked where an inode number
// disagrees, which is rare: it is not on the walk's hot path.
func mountRootAt(dirfd int, name []byte) bool {
	var st unix.Statx_t
	var err error
	if name == nil {
		err = unix.Statx(dirfd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, 0, &st)
	} else {
		err = unix.Statx(dirfd, string(name), statFlags|unix.AT_NO_AUTOMOUNT, 0, &st)
	}
	return err == nil && st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && st.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
}

// linkSeen counts the sightings of one multiply-linked inode.
type linkSeen struct{ nlink, seen, size uint64 }

// agg accumulates the subtree of one directory to the depth (directories
// below it add to their deepest ancestor's agg). It is finished, and folded
// into its parent, when pending (itself and every directory under it not
// yet read) comes to zero.
type agg struct {
	mu       sync.Mutex
	node     *Node
	parent   *agg
	pending  atomic.Int64
	t        totals
	children topK[*Node]
}

// Mtime is an inode's modification time as xfsq trusts it: never later
// than its ctime. The kernel sets ctime to the current time at every
// change, setting the mtime included, and no call sets it by hand; an mtime
// past it was stamped in the future (touch -d 2099…), which would keep a
// cache entry "modified within busy_grace" for ever. Such an entry ages
// from when it was stamped instead. Ordinary writes have mtime == ctime.
func Mtime(st *unix.Stat_t) int64 { return min(st.Mtim.Nano(), st.Ctim.Nano()) }

// LastUse is when an inode was last used, as BuildKit's cache GC ages
// entries: the newest of its mtime (Mtime) and, for anything but a
// directory, its atime — a cache read seconds ago is in use. A directory's
// atime is left out because walks read directories, and under relatime a
// walk would make every cache entry look used once a day. An atime after
// notAfter (unix ns) was stamped in the future (touch -a -d 2099…) and is
// ignored, or it would pin the entry for ever. How atimes move depends on
// the mount: relatime (the default) updates a file's atime at its first
// read after a change and then at most once a day, strictatime at every
// read, and noatime never: there a cache ages by modification only.
func LastUse(st *unix.Stat_t, notAfter int64) int64 {
	return lastUse(st, func() int64 { return notAfter })
}

// lastUse is LastUse reading the bound only when an atime is newer than
// the mtime: a walk stats millions of files, most of them not read since.
func lastUse(st *unix.Stat_t, notAfter func() int64) int64 {
	used := Mtime(st)
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if a := st.Atim.Nano(); a > used && a <= notAfter() {
			used = a
		}
	}
	return used
}

func walkNotAfter() int64 { return time.Now().Add(futureSlack).UnixNano() }

// futureSlack is how far past the clock a walk still takes an atime as a
// use: reads during the walk are uses, a stamp far ahead is not.
const futureSlack = time.Minute

type totals struct {
	size, apparent, files, dirs uint64
	mtime                       int64 // unix nanoseconds
	used                        int64 // newest LastUse, unix nanoseconds
}

func (t *totals) add(o totals) {
	t.size += o.size
	t.apparent += o.apparent
	t.files += o.files
	t.dirs += o.dirs
	t.mtime = max(t.mtime, o.mtime)
	t.used = max(t.used, o.used)
}

// inodeTotals is what one inode adds: du's allocated bytes (st_blocks ×
// 512), apparent bytes, one file or directory, its mtime (see Mtime).
func inodeTotals(st *unix.Stat_t, isDir bool) totals {
	t := totals{size: uint64(st.Blocks) * 512, apparent: uint64(st.Size), mtime: Mtime(st)}
	t.used = t.mtime
	if isDir {
		t.dirs = 1
	} else {
		t.files = 1
		// lastUse, not inlined, only for an atime newer than the mtime:
		// few files have one, and inodeTotals is asked of every file.
		if st.Atim.Nano() > t.used {
			t.used = lastUse(st, walkNotAfter)
		}
	}
	return t
}

func (a *agg) addInode(st *unix.Stat_t, isDir bool) { a.addTotals(inodeTotals(st, isDir)) }

func (a *agg) addTotals(t totals) {
	a.mu.Lock()
	a.t.add(t)
	a.mu.Unlock()
}

// settle counts one directory of a's subtree as read; the last one
// finishes a and settles its parent in turn.
func (a *agg) settle(k int) {
	for ; a != nil && a.pending.Add(-1) == 0; a = a.parent {
		a.finish()
		if a.parent != nil {
			a.parent.addChild(a, k)
		}
	}
}

// addChild folds a finished child into a.
func (a *agg) addChild(c *agg, k int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.t.add(c.t)
	a.children.offer(c.node, k)
}

// finish writes the totals into the node and orders its children.
func (a *agg) finish() {
	n := a.node
	n.SizeBytes, n.ApparentBytes, n.Files, n.Dirs = a.t.size, a.t.apparent, a.t.files, a.t.dirs
	if a.t.mtime > 0 {
		n.Mtime = time.Unix(0, a.t.mtime).UTC()
	}
	if a.t.used > 0 {
		n.LastUse = time.Unix(0, a.t.used).UTC()
	}
	n.Children = a.children.best()
	a.children = nil
}

func (w *walker) expired() bool {
	if !w.deadline.IsZero() && time.Now().After(w.deadline) {
		w.partial.Store(true)
		return true
	}
	return false
}

// worker is one of the walk's goroutines, with what it keeps to itself.
type worker struct {
	w     *walker
	buf   []byte // for getdents64
	stack []job  // its own jobs, depth first: few open directories, warm caches
	top   topK[File]
	// A getdents buffer's files, their stats and errors, kept between
	// directories; ring batches their stats where it is not nil.
	files []fileRec
	sts   []unix.Stat_t
	errs  []unix.Errno
	names []*byte
	ring  *statRing
}

func newWorker(w *walker) *worker {
	k := &worker{w: w, buf: *workerBufs.Get().(*[]byte)}
	if w.batch {
		k.ring = getRing()
	}
	return k
}

// workerBufs are the workers' getdents buffers, kept between walks: a
// snapshot pass of 3,000 small trees allocated ~150 KB of them a tree
// (450 MB a pass) for the collector to sweep. Nothing read from a buffer
// outlives its worker's use of it (names are copied out).
var workerBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// done hands the worker's buffer back; the worker reads nothing after.
func (k *worker) done() {
	putRing(k.ring)
	k.ring = nil
	if b := k.buf; b != nil {
		k.buf = nil
		workerBufs.Put(&b)
	}
}

// run does jobs, its own first and then shared ones, until none is left
// anywhere.
func (k *worker) run() {
	defer func() { k.w.offerTop(k.top) }() // the heap as it is at the end
	for {
		if len(k.stack) == 0 {
			j, ok := k.w.take()
			if !ok {
				return
			}
			k.stack = append(k.stack, j)
		}
		j := k.stack[len(k.stack)-1]
		k.stack = k.stack[:len(k.stack)-1]
		k.visit(j)
		if len(k.stack) > 1 && k.w.waiting.Load() > 0 {
			k.w.give(&k.stack)
		}
	}
}

// startWorkers starts workers until n have started; w.mu is held.
func (w *walker) startWorkers(n int) {
	for ; w.started < n && !w.done; w.started++ {
		k := newWorker(w)
		w.running.Go(func() {
			if w.opts.Background {
				LowerThread() // best effort, as Background
			}
			if w.opts.onWorker != nil {
				w.opts.onWorker()
			}
			k.run()
			k.done()
		})
	}
}

// coldToJoin is how many directories must come from the disk before the
// workers beyond GOMAXPROCS join. One is not enough: a first read or stat
// that an interrupt or a busy host delayed past cachedStat looks the same,
// and a warm walk of 200,000 files on two cores sees up to 4 of those (of
// 21,000 directories on 1,000,000 files, up to 7). A walk that is truly
// cold sees 16 within its first milliseconds.
const coldToJoin = 16

// sawCold notes a directory that the kernel read from the disk; from the
// coldToJoin-th on, every worker is wanted, to keep reads in flight.
func (w *walker) sawCold() {
	if w.cold.Add(1) != coldToJoin {
		return
	}
	w.mu.Lock()
	if w.started > 0 { // else the walk has not started its workers yet
		w.startWorkers(w.opts.Workers)
	}
	w.mu.Unlock()
}

// take waits for a shared job; false when the walk is over.
func (w *walker) take() (job, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.shared) == 0 && !w.done {
		if int(w.waiting.Load()) == w.started-1 { // everyone else is out of work too
			w.done = true
			w.wake.Broadcast()
			break
		}
		w.waiting.Add(1)
		w.wake.Wait()
		w.waiting.Add(-1)
	}
	if len(w.shared) == 0 {
		return job{}, false
	}
	j := w.shared[len(w.shared)-1]
	w.shared = w.shared[:len(w.shared)-1]
	return j, true
}

// give shares the oldest job of a worker's stack, the one nearest the root
// and so likely the largest, with a waiting worker.
func (w *walker) give(stack *[]job) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waiting.Load() == 0 {
		return
	}
	w.shared = append(w.shared, (*stack)[0])
	*stack = (*stack)[1:]
	w.wake.Signal()
}

// visit opens a job's directory and reads it.
func (k *worker) visit(j job) {
	w := k.w
	defer j.parent.release()
	if w.expired() {
		j.acc.settle(w.opts.TopK)
		return
	}
	warm := j.parent.warm
	fd, err := openDir(j.parent.fd, unsafe.StringData(j.name), warm)
	if errors.Is(err, unix.EXDEV) { // a mount point: another filesystem's business
		w.mountPoints.Add(1)
		j.acc.settle(w.opts.TopK)
		return
	}
	if err != nil {
		w.errors.Add(1)
		// Unreadable or vanished: count the directory itself, as du does.
		var st unix.Stat_t
		if fstatat(j.parent.fd, unsafe.StringData(j.name), &st, warm) == nil && st.Dev == w.rootDev && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			j.acc.addInode(&st, true)
		}
		j.acc.settle(w.opts.TopK)
		return
	}
	if !openat2Missing.Load() {
		// Opened with RESOLVE_NO_XDEV: on the walk's mount. Its one fstat,
		// after it is read, gives its own inode and tells whether it is
		// the one its parent listed and whether it changed (read).
		k.read(fd, nil, j.parent.dev, j.ino, j.rel, j.depth, k.accFor(j), warm)
		return
	}
	// Opened without (before Linux 5.6), it may be a mount point: that is
	// told before anything is read from it.
	var st unix.Stat_t
	if err := fstat(fd, &st, warm); err != nil || st.Dev != w.rootDev || (st.Ino != j.ino && !w.entryInosDiffer && mountRootAt(fd, nil)) {
		closeFd(fd, warm) // a mount point: another filesystem's business
		if err != nil {
			w.errors.Add(1)
		} else {
			w.mountPoints.Add(1)
		}
		j.acc.settle(w.opts.TopK)
		return
	}
	if st.Ino != j.ino && !w.entryInosDiffer {
		w.errors.Add(1) // exchanged under the walk, as read says
	}
	acc := k.accFor(j)
	acc.addInode(&st, true)
	if w.opts.Progress != nil {
		w.bytes.Add(uint64(st.Blocks) * 512)
	}
	k.read(fd, &st, st.Dev, j.ino, j.rel, j.depth, acc, warm)
}

// accFor is what j's directory adds to: a node of its own to the depth,
// below it the deepest ancestor's.
func (k *worker) accFor(j job) *agg {
	if j.depth > k.w.opts.Depth {
		return j.acc
	}
	acc := &agg{node: &Node{Path: j.rel}, parent: j.acc}
	acc.pending.Store(1)
	return acc
}

// read reads the open directory fd (at rel, depth below the root) into acc
// and pushes its subdirectories onto the worker's stack. self is its
// fstat if taken before the reading (nil: taken after), dev its device or,
// until that fstat, its parent's (a guess that only a btrfs subvolume
// gets wrong, and entries checks before it refuses a file on it), ino the
// inode number its parent's entry gave it. warm says whether the kernel
// answered the parent from its caches: neighbours usually share blocks, so
// it is the guess for this directory too.
func (k *worker) read(fd int, self *unix.Stat_t, dev, ino uint64, rel string, depth int, acc *agg, warm bool) {
	w := k.w
	subdirs, inos, warm := k.entries(fd, dev, self != nil, rel, acc, warm)
	// After the reading: an entry renamed out of it, or into it, while it
	// was read may be in neither it nor where it went, so its ctime is
	// asked now (changedSince).
	var after unix.Stat_t
	err := fstat(fd, &after, warm)
	if err == nil {
		w.changedSince(&after)
		dev = after.Dev
	}
	if self == nil { // its own inode, which visit did not stat
		switch {
		case err != nil:
			w.errors.Add(1)
		case after.Ino != ino && !w.entryInosDiffer:
			// Not the directory its parent listed under that name: a
			// tenant exchanging directories (RENAME_EXCHANGE) as the walk
			// goes, which can show it each name while the other directory
			// is there and hide a subtree from every name without an
			// error: counted as an entry changed under the walk, which
			// makes its figure a floor. (Not a bind mount: openat2 with
			// RESOLVE_NO_XDEV refuses every mount point, of this
			// filesystem's too.)
			w.errors.Add(1)
			fallthrough
		default:
			acc.addInode(&after, true)
			if w.opts.Progress != nil {
				w.bytes.Add(uint64(after.Blocks) * 512)
			}
		}
	}
	d := &openDirectory{fd: fd, dev: dev, warm: warm}
	d.refs.Store(int32(len(subdirs)) + 1)
	acc.pending.Add(int64(len(subdirs)))
	for i, name := range subdirs {
		k.stack = append(k.stack, job{parent: d, name: name, ino: inos[i], rel: join(rel, name[:len(name)-1]), depth: depth + 1, acc: acc})
	}
	d.release()
	acc.settle(w.opts.TopK)
}

// entries reads a directory with getdents64, stats what is not a
// directory relative to fd, and returns the names of the subdirectories,
// each with its NUL and the inode number the directory gave it, and
// whether the kernel answered from its caches. A file on another device
// than dev is a mount point; dev is the directory's own if devKnown, else
// its parent's, and then asked (fstat) before a file is refused for it.
func (k *worker) entries(fd int, dev uint64, devKnown bool, rel string, a *agg, warm bool) ([]string, []uint64, bool) {
	w, buf := k.w, k.buf
	d := dirRead{fd: fd, dev: dev, devKnown: devKnown, rel: rel}
	// With RawStat, the first read and the first stat of a directory are
	// timed: if the kernel answered them from its caches it will answer the
	// rest so too (neighbours share blocks), and they are made as raw
	// syscalls; if it went to the disk, the rest may too.
	warm = warm && w.opts.RawStat
	firstRead, firstStat := w.opts.RawStat, w.opts.RawStat
	for {
		var n int
		var err error
		if firstRead {
			start := monotonic()
			n, err = getdents(fd, buf, warm)
			firstRead, warm = false, !fromDisk(monotonic()-start, cachedStat+time.Duration(n)*cachedReadPerByte)
		} else {
			n, err = getdents(fd, buf, warm)
		}
		if err != nil {
			if !errors.Is(err, unix.EINTR) {
				w.errors.Add(1)
				break
			}
			continue
		}
		if n <= 0 {
			break
		}
		last := k.parse(&d, buf[:n])
		// fstatat straight from the getdents buffer: no string per file.
		if firstStat && len(k.files) > 0 {
			start := monotonic()
			k.statOne(fd, 0, warm)
			firstStat, warm = false, !fromDisk(monotonic()-start, cachedStat)
			k.statFiles(fd, 1, warm)
		} else {
			k.statFiles(fd, 0, warm)
		}
		for i := range k.files {
			k.account(&d, i, warm)
		}
		if w.endMark && *(*int64)(unsafe.Pointer(&buf[last+8])) == endOfExt4Dir {
			break // the read after it would return 0: one syscall a directory saved
		}
	}
	if w.opts.RawStat && !warm {
		w.sawCold()
	}
	// Progress counters once per directory, not once per file, and only
	// for someone watching: both workers writing them costs ~1 %.
	if w.opts.Progress != nil {
		w.files.Add(d.t.files)
		w.dirs.Add(uint64(len(d.subdirs)))
		w.bytes.Add(d.t.size)
	}
	a.addTotals(d.t)
	return d.subdirs, d.inos, warm
}

// dirRead is what the reading of one directory has found so far.
type dirRead struct {
	fd       int
	dev      uint64
	devKnown bool
	rel      string
	subdirs  []string
	inos     []uint64
	t        totals
}

// fileRec is a getdents record that is not a directory: its name field
// (NUL-terminated, padded) and the inode number the directory gave it.
type fileRec struct {
	rec []byte
	ino uint64
}

// parse takes one getdents buffer's records: the subdirectories into d,
// the rest into k.files to be stat'ed. It returns the last record's offset.
func (k *worker) parse(d *dirRead, buf []byte) (last int) {
	k.files = k.files[:0]
	for off := 0; off < len(buf); {
		last = off
		// struct linux_dirent64: d_ino u64, d_off s64, d_reclen u16, d_type u8, d_name.
		ino := *(*uint64)(unsafe.Pointer(&buf[off]))
		reclen := int(*(*uint16)(unsafe.Pointer(&buf[off+16])))
		typ := buf[off+18]
		rec := buf[off+19 : off+reclen] // the NUL-terminated name, padded
		off += reclen
		if rec[0] == '.' && (rec[1] == 0 || (rec[1] == '.' && rec[2] == 0)) {
			continue
		}
		if typ == unix.DT_DIR {
			d.subdirs = append(d.subdirs, cstringNUL(rec))
			d.inos = append(d.inos, ino)
			continue
		}
		k.files = append(k.files, fileRec{rec: rec, ino: ino})
	}
	if n := len(k.files); cap(k.sts) < n {
		k.sts, k.errs, k.names = make([]unix.Stat_t, n), make([]unix.Errno, n), make([]*byte, n)
	}
	k.sts, k.errs = k.sts[:len(k.files)], k.errs[:len(k.files)]
	return last
}

// statFiles stats k.files[from:] into k.sts and k.errs: in batches through
// the worker's ring where there is one and the batch is worth it
// (ringMin), a quarter of each batch by newfstatat while the ring does the
// rest (statRing.stat); else one newfstatat a file.
func (k *worker) statFiles(fd, from int, warm bool) {
	files := k.files[from:]
	if k.ring != nil && len(files) >= ringMin {
		names := k.names[:len(files)]
		for i := range files {
			names[i] = &files[i].rec[0]
		}
		inline := func(i int) { k.statOne(fd, from+i, warm) }
		if !k.ring.stat(fd, names, k.sts[from:], k.errs[from:], inline) {
			k.ring = nil // given up (abandoned, or closed)
		}
		for i := range files { // what the ring could not answer
			if k.errs[from+i] == unix.EAGAIN {
				k.statOne(fd, from+i, warm)
			}
		}
		return
	}
	for i := range files {
		k.statOne(fd, from+i, warm)
	}
}

func (k *worker) statOne(fd, i int, warm bool) {
	k.errs[i] = 0
	if err := fstatat(fd, &k.files[i].rec[0], &k.sts[i], warm); err != nil {
		k.errs[i] = unix.EIO
		errors.As(err, &k.errs[i])
	}
}

// ringMin is the fewest files a batch goes through the ring for: below it
// the wake-ups of the kernel's worker cost more than the transitions saved
// (on the build machine 16 files a batch were no cheaper than a newfstatat
// each, 50 about 20 % cheaper).
const ringMin = 24

// account adds what k.files[i] holds to d, as du counts it: once a
// multiply-linked inode, nothing of a mount point or an entry swapped
// under the walk (each counted as such), a subdirectory the directory
// typed DT_UNKNOWN to d's subdirectories.
func (k *worker) account(d *dirRead, i int, warm bool) {
	w, rec, st := k.w, k.files[i].rec, &k.sts[i]
	if k.errs[i] != 0 {
		w.errors.Add(1) // vanished since getdents
		return
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR { // DT_UNKNOWN on some filesystems
		d.subdirs = append(d.subdirs, cstringNUL(rec))
		d.inos = append(d.inos, st.Ino)
		return
	}
	if st.Dev != d.dev && !d.devKnown {
		// dev was its parent's: this directory may be a btrfs
		// subvolume, on a device of its own.
		var self unix.Stat_t
		if fstat(d.fd, &self, warm) == nil {
			d.dev = self.Dev
		}
		d.devKnown = true
	}
	if st.Dev != d.dev { // a file bind-mounted over one of the tree's
		w.mountPoints.Add(1)
		return
	}
	if st.Ino != k.files[i].ino && !w.entryInosDiffer {
		// Not the inode the entry named: a file bind-mounted from
		// this filesystem (it keeps st_dev), or one swapped in.
		if mountRootAt(d.fd, direntName(rec)) {
			w.mountPoints.Add(1)
		} else {
			w.errors.Add(1)
		}
		return
	}
	if w.opts.Writing != nil && d.rel == "." && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink == 1 {
		if p, ok := w.opts.Writing[string(direntName(rec))]; ok && st.Ino == p.Ino && uint64(st.Blocks)*512 <= p.Room {
			return
		}
	}
	if st.Nlink > 1 && !w.firstLink(st) {
		return
	}
	file := inodeTotals(st, false)
	d.t.add(file)
	if st.Mode&unix.S_IFMT == unix.S_IFREG && wantsFile(k.top, file.size, d.rel, rec, w.opts.TopK) {
		k.top.offer(File{Path: join(d.rel, string(direntName(rec))), SizeBytes: file.size}, w.opts.TopK)
	}
}

func (w *walker) offerTop(h topK[File]) {
	w.topMu.Lock()
	defer w.topMu.Unlock()
	for _, f := range h {
		w.top.offer(f, w.opts.TopK)
	}
}

// cachedStat is the longest a stat answered from the kernel's caches takes
// (about a microsecond; the rest is room for a preemption). A stat that
// reads the disk takes tens of microseconds at the least.
const cachedStat = 25 * time.Microsecond

// fromDisk decides whether a timed call went to the disk: it took longer
// than the caches ever take. A variable so that a test can make a walk
// turn cold where it wants.
var fromDisk = func(took, cached time.Duration) bool { return took > cached }

// monotonic reads only the monotonic clock (time.Now also reads the wall
// clock): the walk times two calls in every directory.
func monotonic() time.Duration { return time.Since(epoch) }

var epoch = time.Now()

// cachedReadPerByte is what a getdents64 answered from the caches may add
// per byte it returns: a full 32 KiB buffer (a thousand names) takes up to
// ~450µs, fifty names ~20µs.
const cachedReadPerByte = 15 * time.Nanosecond

// firstLink reports whether this is the first sighting of a multiply-linked inode.
func (w *walker) firstLink(st *unix.Stat_t) bool {
	key := [2]uint64{st.Dev, st.Ino}
	w.linkMu.Lock()
	defer w.linkMu.Unlock()
	if l, seen := w.links[key]; seen {
		l.seen++
		return false
	}
	w.links[key] = &linkSeen{nlink: uint64(st.Nlink), seen: 1, size: inodeTotals(st, false).size}
	return true
}

// direntName is the name in a getdents record's name field b, without the
// NUL that ends it and the padding after.
func direntName(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// cstringNUL is the NUL-terminated name in b as a string that keeps its NUL,
// to be passed to the kernel again without a copy.
func cstringNUL(b []byte) string {
	if n := direntName(b); len(n) < len(b) {
		return string(b[:len(n)+1])
	}
	return string(b) + "\x00"
}

func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// ranked is what a top-K list keeps: the largest, and among equal sizes the
// first path in order, so that what is kept does not depend on the order
// the walk met things in.
type ranked interface {
	rank() (size uint64, path string)
}

func (f File) rank() (uint64, string)  { return f.SizeBytes, f.Path }
func (n *Node) rank() (uint64, string) { return n.SizeBytes, n.Path }

// compareRank orders best first: larger, then the first path.
func compareRank[T ranked](a, b T) int {
	sa, pa := a.rank()
	sb, pb := b.rank()
	if sa != sb {
		return cmp.Compare(sb, sa)
	}
	return strings.Compare(pa, pb)
}

// topK is a min-heap of the best-ranked items seen: its root is the first
// to drop.
type topK[T ranked] []T

func (h topK[T]) Len() int           { return len(h) }
func (h topK[T]) Less(i, j int) bool { return compareRank(h[i], h[j]) > 0 }
func (h topK[T]) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *topK[T]) Push(x any)        { *h = append(*h, x.(T)) }
func (h *topK[T]) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// offer keeps x if it is among the k best.
func (h *topK[T]) offer(x T, k int) {
	heap.Push(h, x)
	if h.Len() > k {
		heap.Pop(h)
	}
}

// best returns the items best first.
func (h topK[T]) best() []T {
	s := slices.Clone([]T(h))
	slices.SortFunc(s, compareRank[T])
	return s
}

// wantsFile reports whether the file name (NUL-terminated) in rel of size
// would enter a list of k, without building its path on the heap. It is
// asked about every file, so it is not generic (a generic method reaches
// the items through a dictionary) and is small enough to inline; only a
// tie in size goes on to compare paths.
func wantsFile(h topK[File], size uint64, rel string, name []byte, k int) bool {
	if len(h) < k {
		return true
	}
	if least := h[0].SizeBytes; size != least {
		return size > least
	}
	return firstPath(rel, name, h[0].Path)
}

// firstPath reports whether rel/name (name NUL-terminated) comes before
// path in order.
func firstPath(rel string, name []byte, path string) bool {
	var b [256]byte
	p := b[:0]
	if rel != "." {
		p = append(append(p, rel...), '/')
	}
	for _, c := range name { // not direntName: a call would stop wantsFile from inlining
		if c == 0 {
			break
		}
		p = append(p, c)
	}
	return string(p) < path
}
