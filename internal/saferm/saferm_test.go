package saferm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
	"github.com/xfsq/xfsq/internal/testsupport/treetest"
)

// Both resolutions: openat2, and the per-component fallback of kernels
// before 5.6.
func forEachResolver(t *testing.T, fn func(t *testing.T)) {
	for _, missing := range []bool{false, true} {
		name := map[bool]string{false: "openat2", true: "per-component"}[missing]
		t.Run(name, func(t *testing.T) {
			old := openat2Missing.Load()
			openat2Missing.Store(missing)
			t.Cleanup(func() { openat2Missing.Store(old) })
			fn(t)
		})
	}
}

func open(t *testing.T, dir string) *Dir {
	t.Helper()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// mount mounts src (a directory, a file, or "" for a fresh tmpfs) on dst
// for the test's life.
func mount(t *testing.T, src, dst string) {
	t.Helper()
	if src == "" {
		mounttest.Tmpfs(t, dst)
	} else {
		mounttest.Bind(t, src, dst)
	}
}

func blocks(t *testing.T, p string) uint64 {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return uint64(st.Blocks) * 512
}

// Mount points below the removed entry (a bind mount of a directory from
// the same filesystem, a bind-mounted file, a tmpfs) are neither entered
// nor removed; everything else goes and the report says what stayed.
func TestMountsAreLeftInPlace(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		cases := []struct {
			name  string
			setup func(t *testing.T, entry, outside string) (canary, mountPoint string)
		}{
			{"bind mount of an outside directory", func(t *testing.T, entry, outside string) (string, string) {
				os.MkdirAll(filepath.Join(entry, "deep/mnt"), 0o755)
				mount(t, outside, filepath.Join(entry, "deep/mnt"))
				return filepath.Join(outside, "canary"), filepath.Join(entry, "deep/mnt")
			}},
			{"bind mount of an outside file", func(t *testing.T, entry, outside string) (string, string) {
				treetest.Write(t, filepath.Join(entry, "f-mnt"), 0)
				mount(t, filepath.Join(outside, "canary"), filepath.Join(entry, "f-mnt"))
				return filepath.Join(outside, "canary"), filepath.Join(entry, "f-mnt")
			}},
			{"tmpfs", func(t *testing.T, entry, _ string) (string, string) {
				os.MkdirAll(filepath.Join(entry, "tmp"), 0o755)
				mount(t, "", filepath.Join(entry, "tmp"))
				treetest.Write(t, filepath.Join(entry, "tmp/canary"), 10)
				return filepath.Join(entry, "tmp/canary"), filepath.Join(entry, "tmp")
			}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				root, outside := t.TempDir(), t.TempDir()
				treetest.Write(t, filepath.Join(outside, "canary"), 100)
				entry := filepath.Join(root, "cache/p/e")
				treetest.Write(t, filepath.Join(entry, "a/b/file"), 5000)
				treetest.Write(t, filepath.Join(entry, "top"), 10)
				canary, mp := c.setup(t, entry, outside)
				rep, err := open(t, root).Remove(context.Background(), "cache/p/e", Options{})
				if err != nil {
					t.Fatal(err)
				}
				if !treetest.Exists(canary) {
					t.Fatal("the canary on the mount was deleted")
				}
				if !treetest.Exists(mp) {
					t.Error("the mount point was removed")
				}
				if treetest.Exists(filepath.Join(entry, "a")) || treetest.Exists(filepath.Join(entry, "top")) {
					t.Error("entries beside the mount point were not removed")
				}
				rel, _ := filepath.Rel(root, mp)
				if rep.Removed || len(rep.Left) != 1 || rep.Left[0].Path != rel || rep.Left[0].Reason != LeftMount {
					t.Errorf("report %+v, want %s left as a mount point and the entry not removed", rep, rel)
				}
				if rep.Entries != 4 { // a/b/file, a/b, a, top
					t.Errorf("removed %d entries, want 4", rep.Entries)
				}
			})
		}
	})
}

// The entry named is itself a mount point: nothing happens to it.
func TestMountPointEntryIsLeft(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		root, outside := t.TempDir(), t.TempDir()
		treetest.Write(t, filepath.Join(outside, "canary"), 100)
		os.MkdirAll(filepath.Join(root, "cache/p/e"), 0o755)
		mount(t, outside, filepath.Join(root, "cache/p/e"))
		rep, err := open(t, root).Remove(context.Background(), "cache/p/e", Options{})
		if err != nil || rep.Removed || rep.Entries != 0 || len(rep.Left) != 1 || rep.Left[0].Reason != LeftMount {
			t.Errorf("report %+v, %v; want nothing removed, the mount point left", rep, err)
		}
		if !treetest.Exists(filepath.Join(outside, "canary")) {
			t.Error("the canary was deleted")
		}
	})
}

// No symlink anywhere on the way to the entry is followed: one in an
// intermediate component is refused, so nothing in the other project goes.
func TestSymlinkInPathIsRefused(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		root := t.TempDir()
		treetest.Write(t, filepath.Join(root, "projects/b/uploads/precious"), 10)
		os.MkdirAll(filepath.Join(root, "projects/a"), 0o755)
		os.Symlink("../b", filepath.Join(root, "projects/a/sub"))
		os.Symlink(filepath.Join(root, "projects/b"), filepath.Join(root, "projects/abs"))
		d := open(t, root)
		for _, rel := range []string{"projects/a/sub/uploads", "projects/abs/uploads", "projects/a/sub/uploads/precious"} {
			_, err := d.Remove(context.Background(), rel, Options{})
			if !errors.Is(err, ErrUnsafe) {
				t.Errorf("remove %s: %v, want ErrUnsafe", rel, err)
			}
		}
		for _, rel := range []string{"../x", "/etc", "a/../../x"} {
			if _, err := d.Remove(context.Background(), rel, Options{}); err == nil {
				t.Errorf("remove %q accepted", rel)
			}
		}
		if !treetest.Exists(filepath.Join(root, "projects/b/uploads/precious")) {
			t.Fatal("the other project's upload was deleted")
		}
		if _, err := d.OpenDir("projects/abs"); !errors.Is(err, ErrUnsafe) {
			t.Errorf("OpenDir of a symlinked tree root: %v, want ErrUnsafe", err)
		}
	})
}

// An intermediate directory swapped for a symlink after the entry's parent
// was resolved (the hook runs between resolution and removal): the removal
// goes on in the directory that was resolved, never through the link.
func TestSwapAfterResolution(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		root := t.TempDir()
		treetest.Write(t, filepath.Join(root, "projects/b/sub/dist/precious"), 10)
		treetest.Write(t, filepath.Join(root, "projects/a/sub/dist/junk"), 10)
		testHook = func(string) {
			os.Rename(filepath.Join(root, "projects/a/sub"), filepath.Join(root, "projects/a/moved"))
			os.Symlink("../b/sub", filepath.Join(root, "projects/a/sub"))
		}
		t.Cleanup(func() { testHook = nil })
		rep, err := open(t, root).Remove(context.Background(), "projects/a/sub/dist", Options{})
		if err != nil || !rep.Removed {
			t.Fatalf("remove: %+v %v", rep, err)
		}
		if !treetest.Exists(filepath.Join(root, "projects/b/sub/dist/precious")) {
			t.Fatal("the deletion followed the swapped-in symlink into project b")
		}
		if treetest.Exists(filepath.Join(root, "projects/a/moved/dist")) {
			t.Error("the resolved directory's entry was not removed")
		}
	})
}

// NotDirectory removes a file, and leaves a directory found at the name
// (a tenant's, swapped in after the caller saw a file) with all it holds.
func TestNotDirectoryLeavesADirectorySwappedIn(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		root := t.TempDir()
		treetest.Write(t, filepath.Join(root, "projects/a/f"), 10)
		rep, err := open(t, root).Remove(context.Background(), "projects/a/f", Options{NotDirectory: true})
		if err != nil || !rep.Removed || treetest.Exists(filepath.Join(root, "projects/a/f")) {
			t.Fatalf("a file under NotDirectory: %+v %v, want it removed", rep, err)
		}
		treetest.Write(t, filepath.Join(root, "projects/a/f"), 10)
		testHook = func(string) {
			os.Remove(filepath.Join(root, "projects/a/f"))
			treetest.Write(t, filepath.Join(root, "projects/a/f/work"), 10)
		}
		t.Cleanup(func() { testHook = nil })
		rep, err = open(t, root).Remove(context.Background(), "projects/a/f", Options{NotDirectory: true})
		if err != nil || rep.Removed || len(rep.Left) != 1 || rep.Left[0].Reason != LeftChanged {
			t.Errorf("a directory swapped in: %+v %v, want it left as changed", rep, err)
		}
		if !treetest.Exists(filepath.Join(root, "projects/a/f/work")) {
			t.Fatal("NotDirectory removed a directory's content")
		}
	})
}

// A directory another removal takes while this one holds it open (Linux
// then reads it as ENOENT) is gone, not left: nothing is reported left in
// place and nothing counted as this removal's.
func TestADirectoryRemovedMeanwhileIsGoneNotLeft(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		root := t.TempDir()
		treetest.Write(t, filepath.Join(root, "d/sub/f"), 10)
		openedHook = func(string) {
			if err := os.RemoveAll(filepath.Join(root, "d")); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() { openedHook = nil })
		rep, err := open(t, root).Remove(context.Background(), "d", Options{})
		if err != nil || !rep.Removed || len(rep.Left) != 0 || rep.AllBytes != 0 || rep.Entries != 0 {
			t.Fatalf("remove: %+v %v, want it gone with nothing left and nothing counted", rep, err)
		}
	})
}

// Symlinks below the entry, and the entry itself when it is one, are
// unlinked, never followed.
func TestSymlinksAreUnlinked(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		root, outside := t.TempDir(), t.TempDir()
		treetest.Write(t, filepath.Join(outside, "canary"), 10)
		os.MkdirAll(filepath.Join(root, "e"), 0o755)
		os.Symlink(outside, filepath.Join(root, "e/dir-link"))
		os.Symlink(filepath.Join(outside, "canary"), filepath.Join(root, "e/file-link"))
		os.Symlink(outside, filepath.Join(root, "top-link"))
		d := open(t, root)
		for _, rel := range []string{"e", "top-link"} {
			rep, err := d.Remove(context.Background(), rel, Options{})
			if err != nil || !rep.Removed || len(rep.Left) != 0 {
				t.Errorf("remove %s: %+v %v", rel, rep, err)
			}
			if treetest.Exists(filepath.Join(root, rel)) {
				t.Errorf("%s still there", rel)
			}
		}
		if !treetest.Exists(filepath.Join(outside, "canary")) {
			t.Fatal("a symlink was followed")
		}
	})
}

// Bytes and inodes count only inodes whose last link went: hard links
// inside the removed tree count once, a link to a file that stays counts
// nothing.
func TestAccountsLastLinksOnly(t *testing.T) {
	for _, confirm := range []bool{false, true} {
		t.Run(map[bool]string{false: "link count", true: "confirmed"}[confirm], func(t *testing.T) {
			root := t.TempDir()
			treetest.Write(t, filepath.Join(root, "keep"), 1<<20)
			treetest.Write(t, filepath.Join(root, "d/own"), 64<<10)
			os.Link(filepath.Join(root, "d/own"), filepath.Join(root, "d/own-again"))
			for i := range 3 {
				os.Link(filepath.Join(root, "keep"), filepath.Join(root, "d", "keep-link"+string(rune('a'+i))))
			}
			want := blocks(t, filepath.Join(root, "d/own")) + blocks(t, filepath.Join(root, "d"))
			rep, err := open(t, root).Remove(context.Background(), "d", Options{ConfirmLastLink: confirm})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Entries != 6 || rep.Inodes != 2 || rep.Bytes != want {
				t.Errorf("report %+v, want 6 entries, 2 inodes (own, d), %d bytes", rep, want)
			}
			if !treetest.Exists(filepath.Join(root, "keep")) {
				t.Error("the linked file outside the removal went")
			}
		})
	}
}

// Concurrent removals of one file: exactly one counts it.
func TestConcurrentRemovalsCountOnce(t *testing.T) {
	for range 20 {
		root := t.TempDir()
		treetest.Write(t, filepath.Join(root, "f"), 64<<10)
		d := open(t, root)
		var mu sync.Mutex
		var total Report
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() {
				rep, err := d.Remove(context.Background(), "f", Options{ConfirmLastLink: true})
				if err != nil && !errors.Is(err, unix.ENOENT) {
					t.Error(err)
				}
				mu.Lock()
				total.Entries += rep.Entries
				total.Inodes += rep.Inodes
				mu.Unlock()
			})
		}
		wg.Wait()
		if total.Entries != 1 || total.Inodes != 1 {
			t.Fatalf("six removals of one file counted %+v, want it once", total)
		}
	}
}

// A tree deeper than MaxDepth is removed down to the bound; the rest stays,
// reported, and no descriptor is left open.
func TestDepthIsBounded(t *testing.T) {
	root := t.TempDir()
	dir, err := os.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	fd := int(dir.Fd())
	unix.Mkdirat(fd, "e", 0o755)
	cur, _ := unix.Openat(fd, "e", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	for range MaxDepth + 5 {
		unix.Mkdirat(cur, "d", 0o755)
		next, err := unix.Openat(cur, "d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(cur)
		if err != nil {
			t.Fatal(err)
		}
		cur = next
	}
	unix.Close(cur)
	dir.Close()
	before := openFDs(t)
	rep, err := open(t, root).Remove(context.Background(), "e", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Removed || len(rep.Left) != 1 || rep.Left[0].Reason != LeftDeep {
		t.Errorf("report %+v, want the part past the bound left", rep)
	}
	if got := openFDs(t); got > before+1 { // +1: the Dir itself
		t.Errorf("%d descriptors open after the removal, %d before", got, before)
	}
}

func openFDs(t *testing.T) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// A cancelled context stops the removal; the report says what went.
func TestCancellation(t *testing.T) {
	root := t.TempDir()
	for i := range 2000 {
		treetest.Write(t, filepath.Join(root, "e", "d"+string(rune('a'+i%20)), "f"+strings.Repeat("x", i%7)+string(rune('a'+i/20))), 0)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := open(t, root).Remove(ctx, "e", Options{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
	if rep.Removed || !treetest.Exists(filepath.Join(root, "e")) {
		t.Errorf("a cancelled removal finished: %+v", rep)
	}
}

// A FIFO, a socket and a device node are unlinked like files, never opened.
func TestSpecialFiles(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "e"), 0o755)
	if err := unix.Mkfifo(filepath.Join(root, "e/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		unix.Mknod(filepath.Join(root, "e/null"), unix.S_IFCHR|0o644, int(unix.Mkdev(1, 3)))
	}
	rep, err := open(t, root).Remove(context.Background(), "e", Options{ConfirmLastLink: true})
	if err != nil || !rep.Removed || treetest.Exists(filepath.Join(root, "e")) {
		t.Errorf("report %+v %v", rep, err)
	}
}

// Two links of one inode removed concurrently: the inode is counted at
// most once (under-counting is the safe side for a quota ledger).
func TestConcurrentLinksCountAtMostOnce(t *testing.T) {
	for range 50 {
		root := t.TempDir()
		treetest.Write(t, filepath.Join(root, "a"), 64<<10)
		os.Link(filepath.Join(root, "a"), filepath.Join(root, "b"))
		d := open(t, root)
		var mu sync.Mutex
		var inodes uint64
		var wg sync.WaitGroup
		for _, n := range []string{"a", "b"} {
			wg.Go(func() {
				rep, _ := d.Remove(context.Background(), n, Options{ConfirmLastLink: true})
				mu.Lock()
				inodes += rep.Inodes
				mu.Unlock()
			})
		}
		wg.Wait()
		if inodes > 1 {
			t.Fatalf("one inode counted %d times", inodes)
		}
	}
}

// BenchmarkRemove compares Remove with os.RemoveAll on the same tree
// (100 directories of 100 files), built afresh, untimed, before each run.
func BenchmarkRemove(b *testing.B) {
	build := func(b *testing.B, dir string) {
		for i := range 100 {
			d := filepath.Join(dir, "e", "d"+strconv.Itoa(i))
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
			for j := range 100 {
				if err := os.WriteFile(filepath.Join(d, strconv.Itoa(j)), []byte("x"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	for _, c := range []struct {
		name string
		rm   func(b *testing.B, root string)
	}{
		{"saferm", func(b *testing.B, root string) {
			d, err := Open(root)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			if rep, err := d.Remove(context.Background(), "e", Options{}); err != nil || !rep.Removed {
				b.Fatal(rep, err)
			}
		}},
		{"saferm-confirm", func(b *testing.B, root string) {
			d, _ := Open(root)
			defer d.Close()
			if rep, err := d.Remove(context.Background(), "e", Options{ConfirmLastLink: true}); err != nil || !rep.Removed {
				b.Fatal(rep, err)
			}
		}},
		{"os.Root.RemoveAll", func(b *testing.B, root string) {
			r, _ := os.OpenRoot(root)
			defer r.Close()
			if err := r.RemoveAll("e"); err != nil {
				b.Fatal(err)
			}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			root := b.TempDir()
			for b.Loop() {
				b.StopTimer()
				build(b, root)
				b.StartTimer()
				c.rm(b, root)
			}
		})
	}
}

// A file modified after KeepModifiedAfter (written while its directory is
// being removed) stays, and so does the directory holding it; older ones go.
func TestKeepModifiedAfter(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-48 * time.Hour)
	for _, p := range []string{"e/old1", "e/sub/old2", "e/sub/fresh"} {
		full := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, []byte("x"), 0o644)
		if p != "e/sub/fresh" {
			os.Chtimes(full, old, old)
		}
	}
	d, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rep, err := d.Remove(t.Context(), "e", Options{KeepModifiedAfter: time.Now().Add(-24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{"e/old1": false, "e/sub/old2": false, "e/sub/fresh": true, "e/sub": true} {
		if _, err := os.Lstat(filepath.Join(root, p)); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", p, err == nil, want)
		}
	}
	found := false
	for _, l := range rep.Left {
		found = found || (l.Path == "e/sub/fresh" && l.Reason == LeftFresh)
	}
	if !found {
		t.Errorf("left %+v, want e/sub/fresh named as fresh", rep.Left)
	}
}

// CountChangedBefore credits only what the tree's last walk counted. A
// rename does not change the ctime of what sits below the directory
// renamed, so a directory moved in from another tree after the walk (a
// tenant's mv from its workspace into inbound/, or from inbound/ into its
// scratch) holds files whose ctime predates the walk that never saw them:
// they must count nothing, or the ledger under-counts and admission lets
// writes past the limit. The directory itself shows the move (its ctime
// changed): nothing below a directory changed since the cutoff counts.
func TestCountChangedBeforeIgnoresWhatWasMovedIn(t *testing.T) {
	for _, tc := range []struct {
		name       string
		moveFrom   string // "" : nothing moved after the walk
		moveTo     string
		remove     string
		wantCounts bool
	}{
		{"nothing moved", "", "", "in/d", true},
		{"the entry moved in", "elsewhere/d", "in/d", "in/d", false},
		{"a directory below the entry moved in", "elsewhere/d", "in/e/d", "in/e", false},
		{"a parent of the entry moved in", "elsewhere/d", "in/d", "in/d/f", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			src := "in/d"
			if tc.moveFrom != "" {
				src = tc.moveFrom
			}
			treetest.Write(t, filepath.Join(root, src, "f"), 256<<10)
			os.MkdirAll(filepath.Join(root, "in/e"), 0o755)
			fileBlocks := blocks(t, filepath.Join(root, src, "f"))
			// The walk: it starts after everything above was made.
			time.Sleep(20 * time.Millisecond)
			cutoff := time.Now()
			time.Sleep(20 * time.Millisecond)
			if tc.moveFrom != "" {
				if err := os.Rename(filepath.Join(root, tc.moveFrom), filepath.Join(root, tc.moveTo)); err != nil {
					t.Fatal(err)
				}
			}
			rep, err := open(t, root).Remove(context.Background(), tc.remove, Options{ConfirmLastLink: true, CountChangedBefore: cutoff})
			if err != nil {
				t.Fatal(err)
			}
			if rep.AllBytes < fileBlocks {
				t.Fatalf("report %+v: the file (%d bytes) was not removed", rep, fileBlocks)
			}
			if counted := rep.Bytes >= fileBlocks; counted != tc.wantCounts {
				t.Errorf("report %+v: counted %d bytes, the file holds %d; want it counted: %v", rep, rep.Bytes, fileBlocks, tc.wantCounts)
			}
		})
	}
}

// Beneath reads a directory as its filesystem holds it: beneath a tmpfs on
// it, and beneath one on the way to it, where Open refuses to pass either
// (ErrOtherMount). What it opens is for reading only: no removal goes
// through it, for that would reach beneath a mount point.
func TestBeneathReadsUnderMounts(t *testing.T) {
	root := t.TempDir()
	treetest.Write(t, filepath.Join(root, "tree", "covered", "hidden"), 10)
	treetest.Write(t, filepath.Join(root, "tree", "whole", "sub", "deep"), 10)
	mount(t, "", filepath.Join(root, "tree", "covered"))
	mount(t, "", filepath.Join(root, "tree", "whole"))
	treetest.Write(t, filepath.Join(root, "tree", "covered", "on-the-tmpfs"), 10)
	if _, err := open(t, root).OpenDir("tree/whole/sub"); !errors.Is(err, ErrOtherMount) {
		t.Errorf("Open, then a path through a mount point: %v, want ErrOtherMount", err)
	}
	b, err := Beneath(root)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for rel, want := range map[string]string{"tree/covered": "hidden", "tree/whole/sub": "deep"} {
		d, err := b.OpenDir(rel)
		if err != nil {
			t.Fatalf("Beneath, then %s: %v", rel, err)
		}
		names, err := d.Names()
		if err != nil || len(names) != 1 || names[0] != want {
			t.Errorf("Beneath, then %s: %v %v; want only %q, what the root's filesystem holds there", rel, names, err, want)
		}
		if _, err := d.Remove(context.Background(), want, Options{}); err == nil {
			t.Errorf("a removal through Beneath's copy was allowed")
		}
		d.Close()
	}
	if !treetest.Exists(filepath.Join(root, "tree", "covered", "on-the-tmpfs")) {
		t.Error("the tmpfs went")
	}
	unix.Unmount(filepath.Join(root, "tree", "covered"), 0)
	if !treetest.Exists(filepath.Join(root, "tree", "covered", "hidden")) {
		t.Error("a removal through Beneath's copy removed the file beneath the mount")
	}
}

// Beneath's copy stays a namespace of its own while any Dir opened in it
// is open, though the Dir Beneath returned is closed: a walk holds only
// the tree's Dir, and in a dissolved copy every stat takes the kernel's
// global mount lock (heldCopy). Held, the copy still shows nothing mounted
// on the original after it was made, even where the original's mounts
// propagate (a shared mount).
func TestBeneathCopyHeldWhileItsDirsAreOpen(t *testing.T) {
	root := t.TempDir()
	treetest.Write(t, filepath.Join(root, "tree", "sub", "beneath"), 10)
	mount(t, root, root)
	if err := unix.Mount("", root, "", unix.MS_SHARED, ""); err != nil {
		t.Fatal(err)
	}
	b, err := Beneath(root)
	if err != nil {
		t.Fatal(err)
	}
	d, err := b.OpenDir("tree")
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if d.held == nil {
		t.Fatal("a Dir opened in Beneath's copy does not hold the copy")
	}
	held := d.held.fd
	if _, err := unix.FcntlInt(uintptr(held), unix.F_GETFD, 0); err != nil {
		t.Fatalf("the copy was let go with the Dir Beneath returned, while a Dir in it is open: %v", err)
	}
	mount(t, "", filepath.Join(root, "tree", "sub"))
	treetest.Write(t, filepath.Join(root, "tree", "sub", "on-the-tmpfs"), 10)
	sub, err := d.OpenDir("sub")
	if err != nil {
		t.Fatalf("a mount made on the original after the copy reached it: %v", err)
	}
	if names, err := sub.Names(); err != nil || len(names) != 1 || names[0] != "beneath" {
		t.Errorf("the held copy's sub: %v %v; want only \"beneath\", what the root's filesystem holds there", names, err)
	}
	sub.Close()
	d.Close()
	if _, err := unix.FcntlInt(uintptr(held), unix.F_GETFD, 0); !errors.Is(err, unix.EBADF) {
		t.Errorf("the copy is still held once every Dir in it is closed: %v", err)
	}
}

// A tenant's FUSE mount whose server never answers must not hang the
// checks that tell a mount point: they need only what the kernel keeps of
// the mount, never the filesystem's own attributes.
func TestMountChecksNeverWaitOnAStalledFUSE(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "tree", "fz"), 0o755); err != nil {
		t.Fatal(err)
	}
	mounttest.StalledFUSE(t, filepath.Join(root, "tree", "fz"))
	d, err := open(t, root).OpenDir("tree")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	within := func(what string, f func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { f(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s waited on the stalled FUSE server", what)
		}
	}
	within("OtherMountAt", func() {
		if !d.OtherMountAt(d.Fd(), "fz") {
			t.Error("the FUSE mount point is not told as another mount")
		}
	})
	within("Lstat", func() {
		if st, err := d.Lstat("fz"); err != nil || !st.OtherMount {
			t.Errorf("Lstat of the FUSE mount point: %+v %v; want it told as another mount", st, err)
		}
	})
	treetest.Write(t, filepath.Join(root, "tree", "f"), 10)
	within("Remove", func() {
		rep, err := open(t, root).Remove(context.Background(), "tree", Options{})
		if err != nil || len(rep.Left) != 1 || rep.Left[0].Reason != LeftMount || treetest.Exists(filepath.Join(root, "tree", "f")) {
			t.Errorf("removal of a tree holding the FUSE mount: %+v %v; want all but the mount point removed", rep, err)
		}
	})
}

// The inodes a removal hands on uncounted are those on the device of the
// Dir it was asked of: a btrfs subvolume on the same mount numbers its
// inodes afresh, and its numbers must not be taken for the tree's (a
// ledger row counting inode N of the tree would be credited by another
// file that is N in the subvolume). The device is faked here: the filter
// is what is under test.
func TestUncountedStaysOnTheDirsDevice(t *testing.T) {
	for _, otherDev := range []bool{false, true} {
		root := t.TempDir()
		treetest.Write(t, filepath.Join(root, "tree", "f"), 4096)
		d := open(t, root)
		if otherDev {
			d.dev++
		}
		rep, err := d.Remove(context.Background(), "tree", Options{CountChangedBefore: CountNothing})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{false: 1, true: 0}[otherDev]; len(rep.Uncounted) != want {
			t.Errorf("another device %v: %d inodes handed on, want %d", otherDev, len(rep.Uncounted), want)
		}
	}
}
