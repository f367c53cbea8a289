// Package inventory measures directory trees the way du does — allocated
// and apparent bytes, files and directories, newest mtime, hard links once,
// symlinks not followed, mount points not entered — aggregated to a depth,
// with the largest sub-paths and files, in one parallel pass.
//
// Memory is bounded by the aggregate (nodes to the depth, top-K of each,
// the top-K files, and the inodes that have more than one link), never by
// the number of files. It only reads: it must never open a file's content,
// follow a symlink or leave the filesystem the walk started on.
package inventory

import (
	"container/heap"
	"errors"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Options bound a walk. Zero values take the defaults.
type Options struct {
	Depth   int           // aggregate to this depth below the root: default 3, at most 8
	TopK    int           // children kept per node and top files: default 20
	Workers int           // directories read at once: default 2 × GOMAXPROCS, at least 4
	Budget  time.Duration // stop descending after this long and mark the result partial; 0: none
	// Progress, if set, is called about every 200ms with the running totals,
	// and once more with the final ones.
	Progress func(Progress)
	// RawStat makes the stats of entries that the kernel answers from its
	// caches as raw syscalls, unseen by the Go scheduler: a warm walk is ~8 %
	// faster. A raw stat that does block (a failing disk) holds its thread's
	// P until it returns, which can stall every other goroutine and the
	// garbage collector. Only for a process with nothing else to run (the
	// CLI), never for a server.
	RawStat bool
}

// MaxDepth is the deepest aggregation a walk keeps.
const MaxDepth = 8

// Progress is the running count of a walk.
type Progress struct {
	Files, Bytes uint64
	Elapsed      time.Duration
}

// Node is one directory's totals, with its largest children to the depth.
type Node struct {
	Path          string    `json:"path"` // relative to the walk's root; "." is the root
	SizeBytes     uint64    `json:"size_bytes"`
	ApparentBytes uint64    `json:"apparent_bytes"`
	Files         uint64    `json:"files"`
	Dirs          uint64    `json:"dirs"`
	Mtime         time.Time `json:"mtime"` // newest in the subtree
	Children      []*Node   `json:"children,omitempty"`
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
	Duration time.Duration `json:"duration_ns"`
}

type walker struct {
	opts     Options
	rootDev  uint64
	deadline time.Time
	sem      chan struct{}

	linkMu sync.Mutex
	links  map[[2]uint64]struct{} // inodes with more than one link, seen once

	topMu sync.Mutex
	top   fileHeap

	errors, files, bytes atomic.Uint64
	partial              atomic.Bool
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

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
	// O_NOFOLLOW: the tree's own directory is not followed either, so an
	// entry swapped for a symlink between a check and a walk (the sweeper's
	// re-check) cannot lead the walk out of the tree.
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) { // which one depends on the flags' order of checks
		if fi, lerr := os.Lstat(dir); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			return nil, &os.PathError{Op: "open", Path: dir, Err: errors.New("is a symlink: walks never follow one")}
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: dir, Err: err}
	}
	w := &walker{opts: opts, rootDev: st.Dev, sem: make(chan struct{}, opts.Workers-1), links: map[[2]uint64]struct{}{}}
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
					opts.Progress(Progress{Files: w.files.Load(), Bytes: w.bytes.Load(), Elapsed: time.Since(start)})
				}
			}
		}()
	}
	root := &agg{node: &Node{Path: "."}}
	root.addInode(&st, true)
	local := &fileHeap{}
	w.dir(fd, ".", 0, root, local)
	w.mergeTop(local)
	close(stop)
	if opts.Progress != nil { // the final totals, however short the walk
		opts.Progress(Progress{Files: w.files.Load(), Bytes: w.bytes.Load(), Elapsed: time.Since(start)})
	}
	root.finish(opts.TopK)
	res := &Result{Root: root.node, Partial: w.partial.Load(), Errors: w.errors.Load(), Duration: time.Since(start)}
	sort.Sort(sort.Reverse(&w.top))
	res.TopFiles = make([]File, len(w.top))
	copy(res.TopFiles, w.top)
	return res, nil
}

// agg accumulates one directory's subtree; node is nil below the depth.
type agg struct {
	mu       sync.Mutex
	node     *Node
	t        totals
	children nodeHeap
}

type totals struct {
	size, apparent, files, dirs uint64
	mtime                       int64 // unix nanoseconds
}

func (t *totals) add(o totals) {
	t.size += o.size
	t.apparent += o.apparent
	t.files += o.files
	t.dirs += o.dirs
	t.mtime = max(t.mtime, o.mtime)
}

func (a *agg) addInode(st *unix.Stat_t, isDir bool) {
	a.t.size += uint64(st.Blocks) * 512
	a.t.apparent += uint64(st.Size)
	if isDir {
		a.t.dirs++
	} else {
		a.t.files++
	}
	a.t.mtime = max(a.t.mtime, st.Mtim.Nano())
}

// addChild folds a finished child into a (called from any goroutine).
func (a *agg) addChild(c *agg, k int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.t.add(c.t)
	if a.node != nil && c.node != nil {
		heap.Push(&a.children, c.node)
		if a.children.Len() > k { // keep the k largest children only
			heap.Pop(&a.children)
		}
	}
}

// finish writes the totals into the node and orders its children.
func (a *agg) finish(k int) {
	n := a.node
	if n == nil {
		return
	}
	n.SizeBytes, n.ApparentBytes, n.Files, n.Dirs = a.t.size, a.t.apparent, a.t.files, a.t.dirs
	if a.t.mtime > 0 {
		n.Mtime = time.Unix(0, a.t.mtime).UTC()
	}
	n.Children = make([]*Node, len(a.children))
	copy(n.Children, a.children)
	sort.Slice(n.Children, func(i, j int) bool {
		if n.Children[i].SizeBytes != n.Children[j].SizeBytes {
			return n.Children[i].SizeBytes > n.Children[j].SizeBytes
		}
		return n.Children[i].Path < n.Children[j].Path
	})
}

func (w *walker) expired() bool {
	if !w.deadline.IsZero() && time.Now().After(w.deadline) {
		w.partial.Store(true)
		return true
	}
	return false
}

// dir reads the open directory fd (at rel, depth below the root) into a,
// then walks its subdirectories, and closes fd.
func (w *walker) dir(fd int, rel string, depth int, a *agg, top *fileHeap) {
	subdirs := w.entries(fd, rel, a, top)
	var wg sync.WaitGroup
	for _, name := range subdirs {
		if w.expired() {
			break
		}
		cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			w.errors.Add(1)
			// Unreadable or vanished: count the directory itself, as du does.
			var st unix.Stat_t
			if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Dev == w.rootDev && st.Mode&unix.S_IFMT == unix.S_IFDIR {
				a.addInode(&st, true)
			}
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstat(cfd, &st); err != nil || st.Dev != w.rootDev {
			unix.Close(cfd) // a mount point: another filesystem's business
			if err != nil {
				w.errors.Add(1)
			}
			continue
		}
		child := &agg{}
		if depth+1 <= w.opts.Depth {
			child.node = &Node{Path: join(rel, name)}
		}
		child.addInode(&st, true)
		w.bytes.Add(uint64(st.Blocks) * 512)
		childRel := join(rel, name)
		select {
		case w.sem <- struct{}{}:
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-w.sem }()
				mine := &fileHeap{}
				w.dir(cfd, childRel, depth+1, child, mine)
				w.mergeTop(mine)
				child.finish(w.opts.TopK)
				a.addChild(child, w.opts.TopK)
			}()
		default:
			w.dir(cfd, childRel, depth+1, child, top)
			child.finish(w.opts.TopK)
			a.addChild(child, w.opts.TopK)
		}
	}
	wg.Wait()
	unix.Close(fd)
}

// entries reads a directory with getdents64, stats what is not a
// directory relative to fd, and returns the names of the subdirectories.
func (w *walker) entries(fd int, rel string, a *agg, top *fileHeap) []string {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var subdirs []string
	var t totals
	// With RawStat, the first stat of a directory is timed: if it came from
	// the cache, so will its neighbours (same inode table blocks), and the
	// rest are made as raw syscalls; if it went to the disk, the rest may too.
	first, mayBlock := w.opts.RawStat, true
	for {
		n, err := unix.Getdents(fd, buf)
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
		for off := 0; off < n; {
			// struct linux_dirent64: d_ino u64, d_off s64, d_reclen u16, d_type u8, d_name.
			reclen := int(*(*uint16)(unsafe.Pointer(&buf[off+16])))
			typ := buf[off+18]
			rec := buf[off+19 : off+reclen] // the NUL-terminated name, padded
			off += reclen
			if rec[0] == '.' && (rec[1] == 0 || (rec[1] == '.' && rec[2] == 0)) {
				continue
			}
			if typ == unix.DT_DIR {
				subdirs = append(subdirs, cstring(rec))
				continue
			}
			// fstatat straight from the getdents buffer: no string per file.
			var st unix.Stat_t
			var err error
			if first {
				start := time.Now()
				err = fstatat(fd, &rec[0], &st, true)
				first, mayBlock = false, time.Since(start) > cachedStat
			} else {
				err = fstatat(fd, &rec[0], &st, mayBlock)
			}
			if err != nil {
				w.errors.Add(1) // vanished since getdents
				continue
			}
			if st.Mode&unix.S_IFMT == unix.S_IFDIR { // DT_UNKNOWN on some filesystems
				subdirs = append(subdirs, cstring(rec))
				continue
			}
			if st.Nlink > 1 && !w.firstLink(&st) {
				continue
			}
			size := uint64(st.Blocks) * 512
			t.size += size
			t.apparent += uint64(st.Size)
			t.files++
			t.mtime = max(t.mtime, st.Mtim.Nano())
			if st.Mode&unix.S_IFMT == unix.S_IFREG && top.wants(size, w.opts.TopK) {
				top.offer(File{Path: join(rel, cstring(rec)), SizeBytes: size}, w.opts.TopK)
			}
		}
	}
	// Progress counters once per directory, not once per file.
	w.files.Add(t.files)
	w.bytes.Add(t.size)
	a.mu.Lock()
	a.t.add(t)
	a.mu.Unlock()
	return subdirs
}

// cachedStat is the longest a stat answered from the kernel's caches takes
// (about a microsecond; the rest is room for a preemption). A stat that
// reads the disk takes tens of microseconds at the least.
const cachedStat = 25 * time.Microsecond

// firstLink reports whether this is the first sighting of a multiply-linked inode.
func (w *walker) firstLink(st *unix.Stat_t) bool {
	key := [2]uint64{st.Dev, st.Ino}
	w.linkMu.Lock()
	defer w.linkMu.Unlock()
	if _, seen := w.links[key]; seen {
		return false
	}
	w.links[key] = struct{}{}
	return true
}

func (w *walker) mergeTop(h *fileHeap) {
	w.topMu.Lock()
	defer w.topMu.Unlock()
	for _, f := range *h {
		w.top.offer(f, w.opts.TopK)
	}
}

func cstring(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// fileHeap is a min-heap of the largest files seen.
type fileHeap []File

func (h fileHeap) Len() int { return len(h) }
func (h fileHeap) Less(i, j int) bool {
	if h[i].SizeBytes != h[j].SizeBytes {
		return h[i].SizeBytes < h[j].SizeBytes
	}
	return h[i].Path > h[j].Path
}
func (h fileHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *fileHeap) Push(x any)   { *h = append(*h, x.(File)) }
func (h *fileHeap) Pop() any {
	old := *h
	f := old[len(old)-1]
	*h = old[:len(old)-1]
	return f
}

// wants reports whether a file of size would enter a heap of k; it lets
// the walk skip building paths for files that would not.
func (h *fileHeap) wants(size uint64, k int) bool { return h.Len() < k || size > (*h)[0].SizeBytes }

func (h *fileHeap) offer(f File, k int) {
	heap.Push(h, f)
	if h.Len() > k {
		heap.Pop(h)
	}
}

// nodeHeap is a min-heap of child nodes by size.
type nodeHeap []*Node

func (h nodeHeap) Len() int { return len(h) }
func (h nodeHeap) Less(i, j int) bool {
	if h[i].SizeBytes != h[j].SizeBytes {
		return h[i].SizeBytes < h[j].SizeBytes
	}
	return h[i].Path > h[j].Path
}
func (h nodeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *nodeHeap) Push(x any)   { *h = append(*h, x.(*Node)) }
func (h *nodeHeap) Pop() any {
	old := *h
	n := old[len(old)-1]
	*h = old[:len(old)-1]
	return n
}
