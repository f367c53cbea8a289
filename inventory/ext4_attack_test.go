package inventory

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// The walk stops reading an ext4 directory at the end mark
// (endOfExt4Dir). A tenant who could make a read carry it early would
// hide the rest of the directory from the fallback's admission and from
// snapshots. These are the directories a tenant can make or meet: one
// read linearly (no dir_index: byte offsets), one whose names collide in
// the hash the positions are made of (entries of one hash returned
// together, a read cut short in the middle of them), and a huge one
// spanning many reads; each walked while signals cut reads short (Go's
// preemption sends SIGURG to the walking threads). Every walk must equal
// du, and no read but the last may carry the mark.
func TestWalkOfAttackedExt4DirectoriesMatchesDu(t *testing.T) {
	if os.Geteuid() != 0 {
		prereq.Missing(t, "needs root to mount the ext4 images")
	}
	for _, tool := range []string{"mkfs.ext4", "debugfs", "du"} {
		if _, err := exec.LookPath(tool); err != nil {
			prereq.Missing(t, tool+" missing: apt-get install e2fsprogs coreutils")
		}
	}
	cases := []struct {
		name  string
		mkfs  []string // extra mkfs.ext4 options
		hash  string   // debugfs def_hash_version, "" to keep the default
		build func(t *testing.T, dir string)
	}{
		{"linear", []string{"-O", "^dir_index"}, "", func(t *testing.T, dir string) {
			fill(t, dir, 3000, "a-long-name-that-fills-a-getdents-buffer-sooner-%05d")
		}},
		{"collisions", nil, "legacy", func(t *testing.T, dir string) {
			groups := legacyCollisions(400)
			if len(groups) < 50 {
				t.Fatalf("found %d colliding groups, want 50", len(groups))
			}
			for i, g := range groups {
				for j, n := range g {
					p := filepath.Join(dir, n)
					if (i+j)%3 == 0 { // a directory with something in it
						must(t, os.Mkdir(p, 0o755))
						p = filepath.Join(p, "inside")
					}
					must(t, os.WriteFile(p, []byte("x"), 0o644))
				}
			}
			fill(t, dir, 2000, "filler-%05d")
			assertCollide(t, dir, groups)
		}},
		{"huge", nil, "", func(t *testing.T, dir string) {
			fill(t, dir, 20000, "entry-%06d")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mnt := ext4Image(t, c.mkfs, c.hash)
			dir := filepath.Join(mnt, "tree")
			must(t, os.Mkdir(dir, 0o755))
			c.build(t, dir)
			assertEndMarkOnlyAtTheEnd(t, dir)
			want := duTotal(t, du(t, 0, "-x", "-s", "--block-size=1", dir))
			wantInodes := duTotal(t, du(t, 0, "-x", "-s", "--inodes", dir))
			for _, o := range statModes(t) {
				for _, storm := range []bool{false, true} {
					stop := func() {}
					if storm {
						stop = signalStorm()
					}
					o.Depth, o.TopK = 2, 10
					res, err := Walk(dir, o)
					stop()
					if err != nil {
						t.Fatal(err)
					}
					r := res.Root
					if r.SizeBytes != want || r.Files+r.Dirs != wantInodes || res.Errors != 0 || res.Partial {
						t.Errorf("%s signals=%v: %d bytes, %d inodes (errors %d, partial %v); du says %d bytes, %d inodes",
							statModeName(o), storm, r.SizeBytes, r.Files+r.Dirs, res.Errors, res.Partial, want, wantInodes)
					}
				}
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fill writes n one-byte files (a block each) named by format.
func fill(t *testing.T, dir string, n int, format string) {
	t.Helper()
	for i := range n {
		must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf(format, i)), []byte("x"), 0o644))
	}
}

// ext4Image mounts a fresh ext4 image (mkfs options extra, default hash
// hash) and returns where.
func ext4Image(t *testing.T, extra []string, hash string) string {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "h1-ext4-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	img, mnt := filepath.Join(base, "img"), filepath.Join(base, "mnt")
	must(t, os.Mkdir(mnt, 0o755))
	run := func(name string, args ...string) {
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run("truncate", "-s", "128M", img)
	run("mkfs.ext4", append(append([]string{"-q", "-F", "-N", "60000"}, extra...), img)...)
	if hash != "" {
		run("debugfs", "-w", "-R", "ssv def_hash_version "+hash, img)
	}
	run("mount", "-o", "loop", img, mnt)
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	return mnt
}

// legacyHash is ext4's legacy directory hash (dx_hack_hash) of an ASCII
// name, as the position a read gives it: names with one hash are one
// position.
func legacyHash(name string) uint32 {
	hash0, hash1 := uint32(0x12a3fe2d), uint32(0x37abe8f9)
	for i := 0; i < len(name); i++ {
		h := hash1 + (hash0 ^ uint32(int32(name[i])*7152373))
		if h&0x80000000 != 0 {
			h -= 0x7fffffff
		}
		hash1, hash0 = hash0, h
	}
	return hash0 << 1
}

// legacyCollisions finds up to max groups of names with one legacy hash.
func legacyCollisions(max int) [][]string {
	seen := map[uint32]string{}
	groups := map[uint32][]string{}
	var order []uint32
	for i := 0; len(order) < max && i < 4_000_000; i++ {
		n := "c" + strconv.Itoa(i)
		h := legacyHash(n)
		if first, ok := seen[h]; ok {
			if groups[h] == nil {
				groups[h] = []string{first}
				order = append(order, h)
			}
			groups[h] = append(groups[h], n)
			continue
		}
		seen[h] = n
	}
	out := make([][]string, 0, len(order))
	for _, h := range order {
		out = append(out, groups[h])
	}
	return out
}

// readAll reads dir with buffers of bufSize: each read's names and the
// last record's d_off, and every name's d_off.
func readAll(t *testing.T, dir string, bufSize int) (reads [][]string, ends []int64, offs map[string]int64) {
	t.Helper()
	fd := openDirT(t, dir)
	buf := make([]byte, bufSize)
	offs = map[string]int64{}
	var prev string
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		must(t, err)
		if n == 0 {
			return
		}
		var names []string
		last := 0
		for off := 0; off < n; off += int(*(*uint16)(unsafe.Pointer(&buf[off+16]))) {
			last = off
			name := unix.ByteSliceToString(buf[off+19 : off+int(*(*uint16)(unsafe.Pointer(&buf[off+16])))])
			names = append(names, name)
			// d_off is the position after the record: the next one's.
			if prev != "" {
				offs[prev] = *(*int64)(unsafe.Pointer(&buf[off+8]))
			}
			prev = name
		}
		reads, ends = append(reads, names), append(ends, *(*int64)(unsafe.Pointer(&buf[last+8])))
	}
}

// assertCollide checks that the groups' names really share a position:
// the directory's hash is the legacy one the names were chosen for.
func assertCollide(t *testing.T, dir string, groups [][]string) {
	t.Helper()
	_, _, offs := readAll(t, dir, 32<<10)
	byOff := map[int64]int{}
	for _, n := range offs {
		byOff[n]++
	}
	shared := 0
	for _, k := range byOff {
		if k > 1 {
			shared++
		}
	}
	if shared < len(groups)/2 {
		t.Fatalf("%d positions are shared by several names, want about %d: the names do not collide in this directory's hash", shared, len(groups))
	}
}

// assertEndMarkOnlyAtTheEnd reads dir with buffers of many sizes (the
// walk's, and ones that cut reads short in the middle of a run of
// colliding names): only the last read may carry the end mark, and every
// name is read.
func assertEndMarkOnlyAtTheEnd(t *testing.T, dir string) {
	t.Helper()
	var want int
	for i, size := range []int{32 << 10, 4096, 1024, 333, 200} {
		reads, ends, _ := readAll(t, dir, size)
		n := 0
		for _, r := range reads {
			n += len(r)
		}
		if i == 0 {
			want = n
		} else if n != want {
			t.Errorf("buffer %d: %d names, the walk's buffer read %d", size, n, want)
		}
		for j, end := range ends[:max(0, len(ends)-1)] {
			if end == endOfExt4Dir {
				t.Errorf("buffer %d: read %d of %d carries the end mark: the walk would stop there and miss %d names",
					size, j+1, len(ends), n-countUpTo(reads, j+1))
			}
		}
	}
}

func countUpTo(reads [][]string, k int) int {
	n := 0
	for _, r := range reads[:k] {
		n += len(r)
	}
	return n
}

// signalStorm sends SIGURG (what Go's preemption sends, and the runtime
// ignores otherwise) to every thread of the process until stopped, so
// that reads of directories end early with a signal pending.
func signalStorm() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pid := unix.Getpid()
		for {
			select {
			case <-done:
				return
			default:
			}
			tasks, _ := os.ReadDir("/proc/self/task")
			for _, task := range tasks {
				if tid, err := strconv.Atoi(task.Name()); err == nil && tid != unix.Gettid() {
					unix.Tgkill(pid, tid, unix.SIGURG)
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
