package saferm

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/testsupport/treetest"
)

// heldFd finds the one descriptor (not O_PATH) this process holds open on
// dir: the removal's own.
func heldFd(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	found := -1
	for _, e := range ents {
		l, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil || l != dir {
			continue
		}
		fd, _ := strconv.Atoi(e.Name())
		var st unix.Stat_t
		flags, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		if flags&unix.O_PATH != 0 || unix.Fstat(fd, &st) != nil {
			continue
		}
		if found >= 0 {
			t.Fatalf("two descriptors on %s", dir)
		}
		found = fd
	}
	if found < 0 {
		t.Fatalf("no descriptor held on %s", dir)
	}
	return found
}

// A directory whose read fails while it is still linked (its link count
// is not 0) is left with all it holds and Removed stays false: only a
// directory the kernel has unlinked is taken as gone. Were every read
// error taken as gone, a read failing for any other reason would report
// a live tree removed.
func TestReadFailureOnALiveDirectoryLeavesIt(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		root := t.TempDir()
		treetest.Write(t, filepath.Join(root, "d/sub/f"), 10)
		openedHook = func(string) {
			// The held descriptor now reads as EBADF (an O_PATH one), yet
			// still names the linked directory d.
			held := heldFd(t, filepath.Join(root, "d"))
			p, err := unix.Open(filepath.Join(root, "d"), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := unix.Dup3(p, held, unix.O_CLOEXEC); err != nil {
				t.Fatal(err)
			}
			unix.Close(p)
		}
		t.Cleanup(func() { openedHook = nil })
		rep, err := open(t, root).Remove(context.Background(), "d", Options{})
		if err != nil || rep.Removed || rep.Entries != 0 || rep.AllInodes != 0 || rep.AllBytes != 0 ||
			len(rep.Left) != 1 || !strings.HasPrefix(rep.Left[0].Reason, "could not read") {
			t.Fatalf("remove: %+v %v, want d left as unreadable, nothing removed or counted", rep, err)
		}
		if !treetest.Exists(filepath.Join(root, "d/sub/f")) {
			t.Fatal("d/sub/f went")
		}
	})
}

// A tenant that moves everything out of the directory being removed, and
// then removes the directory itself, keeps what it moved: nothing moved
// out is removed or credited, nothing outside is touched, and the
// directory is gone, not left.
func TestTenantEmptyingAndRemovingTheHeldDirKeepsWhatItMoved(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		root, outside := t.TempDir(), t.TempDir()
		treetest.Write(t, filepath.Join(root, "d/a/f1"), 8192)
		treetest.Write(t, filepath.Join(root, "d/b/f2"), 8192)
		treetest.Write(t, filepath.Join(root, "d/f3"), 8192)
		treetest.Write(t, filepath.Join(root, "keep/canary"), 10)
		treetest.Write(t, filepath.Join(outside, "canary"), 10)
		openedHook = func(string) {
			for _, mv := range [][2]string{{"d/a", "keep/a"}, {"d/b/f2", "keep/f2"}, {"d/f3", "keep/f3"}} {
				if err := os.Rename(filepath.Join(root, mv[0]), filepath.Join(root, mv[1])); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range []string{"d/b", "d"} {
				if err := unix.Rmdir(filepath.Join(root, p)); err != nil {
					t.Fatal(err)
				}
			}
			// A non-empty directory takes d's name.
			treetest.Write(t, filepath.Join(root, "d/new"), 10)
		}
		t.Cleanup(func() { openedHook = nil })
		rep, err := open(t, root).Remove(context.Background(), "d", Options{})
		if err != nil || rep.Entries != 0 || rep.AllInodes != 0 || rep.AllBytes != 0 || len(rep.Left) != 0 {
			t.Fatalf("remove: %+v %v, want nothing removed or counted and nothing left", rep, err)
		}
		for _, p := range []string{filepath.Join(root, "keep/a/f1"), filepath.Join(root, "keep/f2"), filepath.Join(root, "keep/f3"),
			filepath.Join(root, "keep/canary"), filepath.Join(root, "d/new"), filepath.Join(outside, "canary")} {
			if !treetest.Exists(p) {
				t.Errorf("%s went", p)
			}
		}
	})
}

// Several removals of one tree race each other (taking directories from
// one another: the gone-not-left case) and a tenant that creates, moves
// (into and out of the tree, by exchange, over empty directories) and
// removes directories and files in it, and links out of it. Every inode is freed once, so what
// the removals credit, what the tenant counted freeing and what survives
// never add up to more than was ever created; nothing outside the tree's
// reach is touched.
func TestTenantRaceNeverOverCredits(t *testing.T) {
	deadline := time.Now().Add(3 * time.Second)
	for round := 0; round < 10 && time.Now().Before(deadline); round++ {
		root, outside := t.TempDir(), t.TempDir()
		treetest.Write(t, filepath.Join(outside, "canary"), 10)
		treetest.Write(t, filepath.Join(root, "canary/c"), 10)
		var created, freed atomic.Int64
		dirs := []string{"d", "d/a", "d/a/b", "d/a/b/c", "d/x", "d/x/y", "keep", "keep/k", "keep/k/l"}
		for _, p := range dirs {
			os.MkdirAll(filepath.Join(root, p), 0o755)
			created.Add(1)
		}
		n := 0
		for _, p := range dirs {
			for range 3 {
				treetest.Write(t, filepath.Join(root, p, "f"+strconv.Itoa(n)), 100)
				n++
				created.Add(1)
			}
		}
		// Many small directories, for removals to take from each other.
		for i := range 400 {
			p := filepath.Join(root, "d", "m"+strconv.Itoa(i), "n")
			treetest.Write(t, filepath.Join(p, "f"), 100)
			created.Add(3)
		}
		created.Add(2) // canary/ and canary/c
		d := open(t, root)
		stop := make(chan struct{})
		var tenant sync.WaitGroup
		tenant.Go(func() {
			r := rand.New(rand.NewPCG(uint64(round), 7))
			pick := func() string { return filepath.Join(root, dirs[r.IntN(len(dirs))]) }
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				switch r.IntN(8) {
				case 0:
					if unix.Mkdir(pick(), 0o755) == nil {
						created.Add(1)
					}
				case 1:
					fd, err := unix.Open(filepath.Join(pick(), "t"+strconv.Itoa(i)), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
					if err == nil {
						created.Add(1)
						unix.Write(fd, make([]byte, 100))
						unix.Close(fd)
					}
				case 2:
					unix.Renameat2(unix.AT_FDCWD, pick(), unix.AT_FDCWD, pick(), unix.RENAME_NOREPLACE)
				case 3:
					unix.Renameat2(unix.AT_FDCWD, pick(), unix.AT_FDCWD, pick(), unix.RENAME_EXCHANGE)
				case 4:
					// Empty a directory by moving its entries into another,
					// then remove it.
					src, dst := pick(), pick()
					if ents, err := os.ReadDir(src); err == nil {
						for _, e := range ents {
							unix.Renameat2(unix.AT_FDCWD, filepath.Join(src, e.Name()), unix.AT_FDCWD, filepath.Join(dst, e.Name()), unix.RENAME_NOREPLACE)
						}
					}
					if unix.Rmdir(src) == nil {
						freed.Add(1)
					}
				case 5:
					if unix.Rmdir(pick()) == nil {
						freed.Add(1)
					}
				case 6:
					// Over an empty directory (perhaps one a removal holds),
					// which it frees: not counted here, so the sum below
					// only gets smaller.
					unix.Rename(pick(), pick())
				case 7:
					// A link out, named so that no path the tenant uses
					// passes through it.
					if unix.Symlink(outside, filepath.Join(pick(), "s"+strconv.Itoa(i))) == nil {
						created.Add(1)
					}
				}
			}
		})
		var mu sync.Mutex
		var credited uint64
		var removers sync.WaitGroup
		start := make(chan struct{})
		for range 4 {
			removers.Go(func() {
				<-start
				for range 3 {
					for _, rel := range []string{"d", "keep"} {
						rep, _ := d.Remove(context.Background(), rel, Options{ConfirmLastLink: true})
						mu.Lock()
						credited += rep.AllInodes
						if rep.Inodes != rep.AllInodes {
							t.Errorf("Inodes %d, AllInodes %d without a cutoff", rep.Inodes, rep.AllInodes)
						}
						mu.Unlock()
					}
				}
			})
		}
		close(start)
		removers.Wait()
		close(stop)
		tenant.Wait()
		var surviving int64
		filepath.WalkDir(root, func(p string, _ os.DirEntry, err error) error {
			if err == nil && p != root {
				surviving++
			}
			return nil
		})
		if int64(credited)+freed.Load()+surviving > created.Load() {
			t.Fatalf("round %d: credited %d + tenant freed %d + surviving %d > created %d: an inode credited twice or not freed",
				round, credited, freed.Load(), surviving, created.Load())
		}
		for _, p := range []string{filepath.Join(outside, "canary"), filepath.Join(root, "canary/c")} {
			if !treetest.Exists(p) {
				t.Fatalf("round %d: %s went", round, p)
			}
		}
	}
}
