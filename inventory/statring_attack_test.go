package inventory

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// gcStorm collects without pause, with the collector set to run at every
// 1 % of growth, until stopped: memory handed to the kernel that the Go
// heap no longer holds would be freed and reused under a walk.
func gcStorm() (stop func()) {
	old := debug.SetGCPercent(1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
				runtime.GC()
				_ = make([]byte, 64<<10) // garbage for the next cycle to reuse
			}
		}
	}()
	return func() { close(done); wg.Wait(); debug.SetGCPercent(old) }
}

// A tenant racing a batched walk in a directory of several ring batches:
// files exchanged (RENAME_EXCHANGE) with a directory, a symlink to a big
// file outside the tree and a FIFO, a directory with a symlink to one
// outside, files unlinked and made again, a hard
// link to a file that never changes appearing and disappearing, two
// directories exchanged, and (root) a big file outside bind-mounted over
// one of the tree's files and unmounted, while signals interrupt the
// walk's io_uring_enter and the collector runs without pause. No walk may
// open or count what is outside, lose a file that never changed, or fail; once the
// tenant stops, the batched walk equals the one-syscall-a-file walk.
func TestBatchStatUnderATenantsRaces(t *testing.T) {
	if len(statModes(t)) < 3 {
		prereq.Missing(t, "io_uring is missing or refused here ("+ringGivenUp()+"): kernel.io_uring_disabled=0 and no seccomp filter on it")
	}
	dir, outside := t.TempDir(), t.TempDir()
	const canarySize = 16 << 20
	canary := filepath.Join(outside, "canary")
	must(t, os.WriteFile(canary, make([]byte, canarySize), 0o644))
	busy := filepath.Join(dir, "busy")
	must(t, os.Mkdir(busy, 0o755))
	const stable, stableSize = 600, 8 << 10
	for i := range stable {
		// names of every length from 4 to 255 bytes
		name := fmt.Sprintf("s%03d", i) + strings.Repeat("é", (i%252)/2) + strings.Repeat("x", (i%252)%2)
		must(t, os.WriteFile(filepath.Join(busy, name), make([]byte, stableSize), 0o644))
	}
	const volatile = 40
	for i := range volatile {
		must(t, os.WriteFile(filepath.Join(busy, fmt.Sprintf("v%02d", i)), make([]byte, 4096), 0o644))
	}
	for _, d := range []string{"vd", "x", "y"} {
		must(t, os.Mkdir(filepath.Join(busy, d), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(busy, "x", "inx"), make([]byte, 4096), 0o644))
	must(t, os.Symlink(canary, filepath.Join(busy, "vs")))
	must(t, os.Symlink(outside, filepath.Join(busy, "vsd")))
	must(t, unix.Mkfifo(filepath.Join(busy, "vf"), 0o644))
	must(t, os.WriteFile(filepath.Join(busy, "bm"), nil, 0o644))
	s000 := filepath.Join(busy, "s000")

	var stop atomic.Bool
	var changes atomic.Int64
	var wg sync.WaitGroup
	tenant := func(f func(i int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				if f(i) == nil {
					changes.Add(1)
				}
			}
		}()
	}
	exchange := func(a, b string) error {
		return unix.Renameat2(unix.AT_FDCWD, filepath.Join(busy, a), unix.AT_FDCWD, filepath.Join(busy, b), unix.RENAME_EXCHANGE)
	}
	tenant(func(i int) error {
		v := fmt.Sprintf("v%02d", i%volatile)
		switch i % 5 {
		case 0:
			return exchange(v, "vd")
		case 1:
			return exchange(v, "vs")
		case 2:
			return exchange(v, "vf")
		case 3:
			if i%2 == 0 {
				return exchange("x", "vsd") // a directory for a symlink to one outside
			}
			return exchange("x", "y")
		}
		p := filepath.Join(busy, v)
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
			os.Remove(p)
			return os.WriteFile(p, make([]byte, 4096), 0o644)
		}
		return nil
	})
	tenant(func(i int) error {
		h := filepath.Join(busy, "h")
		if i%2 == 0 {
			return os.Link(s000, h)
		}
		return os.Remove(h)
	})
	if os.Geteuid() == 0 {
		tenant(func(i int) error {
			bm := filepath.Join(busy, "bm")
			if err := unix.Mount(canary, bm, "", unix.MS_BIND, ""); err != nil {
				return err
			}
			return unix.Unmount(bm, unix.MNT_DETACH)
		})
	}
	// Whatever opens or reads the directory outside, or the file in it.
	in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	must(t, err)
	defer unix.Close(in)
	for _, p := range []string{outside, canary} {
		_, err := unix.InotifyAddWatch(in, p, unix.IN_OPEN|unix.IN_ACCESS)
		must(t, err)
	}
	stopSignals, stopGC := signalStorm(), gcStorm()
	batched, raw := Options{Depth: 3, TopK: 50, RawStat: true, BatchStat: true}, Options{Depth: 3, TopK: 50, RawStat: true}
	deadline := time.Now().Add(8 * time.Second)
	walks, counted := 0, map[bool]int{}
	for i := 0; i < 60 && time.Now().Before(deadline); i++ {
		o := raw
		if i%3 != 0 {
			o = batched
		}
		batches := ringBatches.Load()
		res, err := Walk(dir, o)
		if err != nil {
			t.Fatalf("%s: a walk failed under the tenant's races: %v", statModeName(o), err)
		}
		walks++
		if o.BatchStat && ringBatches.Load() == batches {
			t.Errorf("BatchStat: the busy directory's files did not go through the ring")
		}
		r := res.Root
		if r.SizeBytes >= canarySize {
			t.Errorf("%s: %d bytes: the walk counted the file outside the tree", statModeName(o), r.SizeBytes)
		}
		if r.Files < stable || r.SizeBytes < stable*stableSize {
			t.Errorf("%s: %d files, %d bytes: files that never changed were lost (%d of %d bytes)",
				statModeName(o), r.Files, r.SizeBytes, stable, stable*stableSize)
		}
		for _, f := range res.TopFiles {
			if f.SizeBytes >= canarySize || !strings.HasPrefix(f.Path, "busy/") {
				t.Errorf("%s: top file %+v is not the tree's", statModeName(o), f)
			}
		}
		counted[res.Changed+res.Errors > 0]++
	}
	stop.Store(true)
	wg.Wait()
	stopSignals()
	stopGC()
	if n, _ := unix.Read(in, make([]byte, 4096)); n > 0 {
		t.Errorf("a walk opened or read what is outside the tree (%d bytes of inotify events)", n)
	}
	t.Logf("%d walks during %d changes; %d said the tree changed under them, %d did not", walks, changes.Load(), counted[true], counted[false])
	if changes.Load() == 0 || counted[true] == 0 {
		t.Fatal("the tenant changed nothing the walks saw: the test tests nothing")
	}
	// Still again: the walks agree with each other and du, exactly.
	want, err := Walk(dir, Options{Depth: 3, TopK: 50})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{raw, batched} {
		res, err := Walk(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		if res.Errors != 0 || res.MountPoints != 0 || !sameWalk(res, want) {
			t.Errorf("%s on the still tree: errors %d, mount points %d,\n%+v\nwant %+v", statModeName(o), res.Errors, res.MountPoints, res.Root, want.Root)
		}
	}
	if du := duTotal(t, du(t, 0, "-x", "-s", "--block-size=1", dir)); want.Root.SizeBytes != du {
		t.Errorf("the still tree: %d bytes, du says %d", want.Root.SizeBytes, du)
	}
}

// sameWalk reports whether two walks of one tree found the same figures.
func sameWalk(a, b *Result) bool {
	var eq func(x, y *Node) bool
	eq = func(x, y *Node) bool {
		if x.Path != y.Path || x.SizeBytes != y.SizeBytes || x.ApparentBytes != y.ApparentBytes || x.Files != y.Files ||
			x.Dirs != y.Dirs || !x.Mtime.Equal(y.Mtime) || len(x.Children) != len(y.Children) {
			return false
		}
		for i := range x.Children {
			if !eq(x.Children[i], y.Children[i]) {
				return false
			}
		}
		return true
	}
	return eq(a.Root, b.Root) && fmt.Sprint(a.TopFiles) == fmt.Sprint(b.TopFiles) && a.SharedBytes == b.SharedBytes && a.MountPoints == b.MountPoints
}

// Files bind-mounted over files of a directory the ring stats (one from
// another filesystem, one from the tree's own, which keeps st_dev) are
// mount points in every mode: neither is counted, nor its name shown.
func TestBatchStatLeavesOutFilesMountedOver(t *testing.T) {
	if os.Geteuid() != 0 {
		prereq.Missing(t, "mounting inside a tree needs root")
		return
	}
	dir, same, other := t.TempDir(), t.TempDir(), t.TempDir()
	const n = 2 * ringMin
	fill(t, dir, n, "file-%02d")
	must(t, os.WriteFile(filepath.Join(same, "secret"), make([]byte, 1<<20), 0o644))
	mounttest.Tmpfs(t, other)
	must(t, os.WriteFile(filepath.Join(other, "big"), make([]byte, 1<<20), 0o644))
	mounttest.Bind(t, filepath.Join(same, "secret"), filepath.Join(dir, "file-03"))
	mounttest.Bind(t, filepath.Join(other, "big"), filepath.Join(dir, "file-30"))
	for _, o := range statModes(t) {
		batches := ringBatches.Load()
		res, err := Walk(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		if o.BatchStat && ringBatches.Load() == batches {
			t.Errorf("BatchStat: the files did not go through the ring")
		}
		if res.MountPoints != 2 || res.Errors != 0 || res.Root.Files != n-2 || res.Root.SizeBytes >= 1<<20 {
			t.Errorf("%s: mount points %d, errors %d, %d files of %d bytes; want 2, 0, %d files of a block each",
				statModeName(o), res.MountPoints, res.Errors, res.Root.Files, res.Root.SizeBytes, n-2)
		}
		for _, f := range res.TopFiles {
			if f.Path == "file-03" || f.Path == "file-30" {
				t.Errorf("%s: top file %s is a mount point", statModeName(o), f.Path)
			}
		}
	}
}
