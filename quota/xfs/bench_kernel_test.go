package xfs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/testsupport/kerneltest"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/quota/xfs/quotactl"
)

// These benchmarks need real project quotas: run them with scripts/kernel-bench.sh
// (on ext4: scripts/kernel-bench.sh --fs ext4),
// which boots the test kernel for them. See docs/benchmarks.md.

const benchTrees = 1000

// BenchmarkKernelUsage reads usage and limits of 1,000 trees holding 1 GiB
// in 100,000 files: one enumeration (slice and map forms) against the floor of 1,000 bare
// quotactl calls, one `xfs_quota report` with its output parsed, and the
// walk a user would otherwise make (`du -s` over the trees).
func BenchmarkKernelUsage(b *testing.B) {
	kfs := kerneltest.ForBenchmark(b)
	fs, err := Open(kfs.Dir)
	if err != nil {
		b.Fatal(err)
	}
	// Closed before the harness unmounts: an open handle fails the
	// unmount, unless a GC happened to run its finalizer first.
	b.Cleanup(func() { fs.Close() })
	for i := range benchTrees {
		dir := filepath.Join(kfs.Dir, fmt.Sprint("t", i))
		os.Mkdir(dir, 0o755)
		id := quota.ProjectID(1000 + i)
		if err := fs.Assign(dir, id); err != nil {
			b.Fatal(err)
		}
		if err := fs.SetLimits(id, quota.Limits{BytesHard: 64 * mib, InodesHard: 1000}); err != nil {
			b.Fatal(err)
		}
		if err := fillTree(dir); err != nil {
			b.Fatal(err)
		}
	}
	// The enumeration a report or a scrape makes (project.Report,
	// project.Usage): every ID in ID order, into the buffer WithAll lends.
	enumerateOn := func(b *testing.B, fs *FS) {
		if err := fs.WithAll(func(all []quota.Quota) error {
			if len(all) != benchTrees {
				b.Fatalf("%d trees", len(all))
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	enumerate := func(b *testing.B) { enumerateOn(b, fs) }
	// The same pass as a one-shot `xfsq report` makes it, the only one of
	// its process: on an FS that has made none (nothing pooled, no size
	// remembered), sized by ExpectIDs as Report sizes it.
	oneshot := func(b *testing.B) {
		first := &FS{dir: fs.dir, kind: fs.kind, max: fs.max, handle: fs.handle, dev: fs.dev, mount: fs.mount, target: fs.target}
		first.ExpectIDs(benchTrees)
		enumerateOn(b, first)
	}
	// A fresh result (AppendAll(nil)), what the map form and callers that
	// keep the figures pay: the same, plus allocating and zeroing 72 KB.
	fresh := func(b *testing.B) {
		if all, err := fs.AppendAll(nil); err != nil || len(all) != benchTrees {
			b.Fatalf("%d trees, %v", len(all), err)
		}
	}
	b.Run("xfsq", func(b *testing.B) {
		for b.Loop() {
			enumerate(b)
		}
	})
	// The map form, for callers that look IDs up (allocation, doctor).
	b.Run("xfsq-map", func(b *testing.B) {
		for b.Loop() {
			all, err := fs.All()
			if err != nil || len(all) != benchTrees {
				b.Fatalf("%d trees, %v", len(all), err)
			}
		}
	})
	// The floor: the very calls an enumeration must make, one
	// Q_XGETNEXTQUOTA per ID, written as the least code that can make
	// them: the syscall itself on the same descriptor, one buffer for
	// every answer, the next ID taken from the answer, nothing else done
	// with it. The kernel offers no batch call, so xfsq cannot beat this;
	// what xfsq adds is telling ENOENT from a failure and converting each
	// answer into its result.
	if fs.target.Device != "" {
		b.Fatal("the floor calls quotactl_fd; this kernel took the device route")
	}
	fd := uintptr(fs.target.FD)
	cmd := uintptr(quotactl.QCmd(quotactl.QXGetNextQuo, quotactl.PrjQuota))
	floor := func(b *testing.B) {
		var q quotactl.DiskQuota
		n := 0
		for next := uint32(1); ; n++ {
			_, _, errno := unix.Syscall6(unix.SYS_QUOTACTL_FD, fd, cmd, uintptr(next), uintptr(unsafe.Pointer(&q)), 0, 0)
			if errno != 0 || q.ID == ^uint32(0) {
				break
			}
			next = q.ID + 1
		}
		if n != benchTrees {
			b.Fatalf("floor saw %d IDs", n)
		}
	}
	b.Run("quotactl-floor", func(b *testing.B) {
		for b.Loop() {
			floor(b)
		}
	})
	// The enumeration and the floor alternated, pair by pair, in
	// alternating order: on a shared machine under emulation the load
	// drifts between runs by more than the two differ, so the goal is
	// judged on the median ratio of adjacent pairs (xfsq/floor), not on
	// medians taken a minute apart. The ratio of the fastest of each
	// (xfsq/floor-min) is the least disturbed figure when the host is
	// so loaded that even adjacent pairs differ by their stalls. Each
	// iteration times pairsPerOp pairs: a pair costs milliseconds, the
	// fixture minutes, so more pairs per run make both figures steadier
	// for little time (ns/op is then that many pairs).
	const pairsPerOp = 5
	paired := func(enumerate func(b *testing.B)) func(b *testing.B) {
		return func(b *testing.B) {
			var ratios []float64
			minX, minF := time.Duration(1<<62), time.Duration(1<<62)
			pair := func(i int) {
				var x, f time.Duration
				timed := func() {
					start := time.Now()
					enumerate(b)
					x = time.Since(start)
				}
				bare := func() {
					start := time.Now()
					floor(b)
					f = time.Since(start)
				}
				if i%2 == 0 {
					timed()
					bare()
				} else {
					bare()
					timed()
				}
				ratios = append(ratios, float64(x)/float64(f))
				minX, minF = min(minX, x), min(minF, f)
			}
			for i := 0; b.Loop(); {
				for range pairsPerOp {
					pair(i)
					i++
				}
			}
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "xfsq/floor")
			b.ReportMetric(float64(minX)/float64(minF), "xfsq/floor-min")
		}
	}
	// The goal: the enumeration a report or a scrape makes.
	b.Run("paired", paired(enumerate))
	// The other goal: a one-shot report's pass, with the collector off
	// for the run: the process exits after its one pass and never collects
	// what it allocated, while a loop of such passes would set off the
	// collections no one-shot pays (fresh-paired has them).
	b.Run("oneshot-paired", func(b *testing.B) {
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		paired(oneshot)(b)
	})
	// Where the rest goes, in the same boot. fresh-paired: a fresh result
	// every pass of a long-lived process (AppendAll(nil), as All does), so
	// the difference to paired is allocating and zeroing the 1,000
	// entries and the collections a loop of them sets off. calls-paired:
	// only the wrapper's calls into one buffer, nothing converted, so the
	// difference to the floor is the layering (the quotactl package's
	// call, telling ENOENT from a failure).
	b.Run("fresh-paired", paired(fresh))
	b.Run("calls-paired", paired(func(b *testing.B) {
		var q quotactl.DiskQuota
		n := 0
		for next := uint32(1); ; n++ {
			if err := fs.target.GetNextQuota(quotactl.PrjQuota, next, &q); err != nil {
				if errors.Is(err, unix.ENOENT) {
					break
				}
				b.Fatal(err)
			}
			if q.ID == ^uint32(0) {
				break
			}
			next = q.ID + 1
		}
		if n != benchTrees {
			b.Fatalf("calls saw %d IDs", n)
		}
	}))
	// The cheapest quotactl there is, as often: what the syscalls cost
	// before the kernel looks up any quota.
	b.Run("quotactl-statv", func(b *testing.B) {
		for b.Loop() {
			for range benchTrees {
				if _, err := fs.target.GetStatV(quotactl.PrjQuota); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("xfs_quota", func(b *testing.B) {
		for b.Loop() {
			if got := xfsQuotaReport(b, kfs); len(got) < benchTrees {
				b.Fatalf("xfs_quota reported %d trees", len(got))
			}
		}
	})
	dirs := make([]string, benchTrees)
	for i := range dirs {
		dirs[i] = fmt.Sprint("t", i)
	}
	b.Run("du-s", func(b *testing.B) {
		for b.Loop() {
			du := exec.Command("du", append([]string{"-s"}, dirs...)...)
			du.Dir = kfs.Dir
			if out, err := du.Output(); err != nil || strings.Count(string(out), "\n") != benchTrees {
				b.Fatalf("du -s: %v", err)
			}
		}
	})
}

// benchFiles files per tree holding 1 GiB over all benchTrees trees.
const (
	benchFiles    = 100
	benchFileSize = (1 << 30) / (benchTrees * benchFiles)
)

func fillTree(dir string) error {
	data := make([]byte, benchFileSize)
	for i := range benchFiles {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprint("f", i)), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkKernelAssignLimit assigns and limits 1,000 empty trees: xfsq's
// calls against the xfs_quota commands an operator would script, one
// process per command.
func BenchmarkKernelAssignLimit(b *testing.B) {
	kfs := kerneltest.ForBenchmark(b)
	fs, err := Open(kfs.Dir)
	if err != nil {
		b.Fatal(err)
	}
	// Closed before the harness unmounts: an open handle fails the
	// unmount, unless a GC happened to run its finalizer first.
	b.Cleanup(func() { fs.Close() })
	nextID := quota.ProjectID(1000)
	// trees makes n fresh directories outside the timed region.
	trees := func(b *testing.B, n int) []string {
		b.StopTimer()
		defer b.StartTimer()
		base := filepath.Join(kfs.Dir, fmt.Sprint("round", nextID))
		dirs := make([]string, n)
		for i := range dirs {
			dirs[i] = filepath.Join(base, fmt.Sprint("t", i))
			if err := os.MkdirAll(dirs[i], 0o755); err != nil {
				b.Fatal(err)
			}
		}
		return dirs
	}
	b.Run("xfsq", func(b *testing.B) {
		for b.Loop() {
			for _, dir := range trees(b, benchTrees) {
				nextID++
				if err := fs.Assign(dir, nextID); err != nil {
					b.Fatal(err)
				}
				if err := fs.SetLimits(nextID, quota.Limits{BytesHard: 10 * mib}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	xfsQuota := func(b *testing.B, cmds ...string) {
		args := []string{"-x"}
		for _, c := range cmds {
			args = append(args, "-c", c)
		}
		if out, err := exec.Command("xfs_quota", append(args, kfs.Dir)...).CombinedOutput(); err != nil || strings.Contains(string(out), "rror") {
			b.Fatalf("xfs_quota %v: %v: %s", cmds, err, out)
		}
	}
	// Two processes per tree take minutes for 1,000 trees under emulation:
	// the reference does a fiftieth of them, and is named for it, so that
	// its time ×50 compares with xfsq's 1,000. On ext4 the script an
	// operator would write is chattr -p and setquota -P (package quota).
	if kfs.Type == kerneltest.TypeExt4 {
		b.Run(fmt.Sprintf("chattr-setquota-%dtrees", benchTrees/50), func(b *testing.B) {
			for b.Loop() {
				for _, dir := range trees(b, benchTrees/50) {
					nextID++
					for _, args := range [][]string{
						{"chattr", "-p", fmt.Sprint(nextID), "+P", dir},
						{"setquota", "-P", fmt.Sprint(nextID), "0", "10240", "0", "0", kfs.Dir},
					} {
						if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
							b.Fatalf("%v: %v: %s", args, err, out)
						}
					}
				}
			}
		})
		return
	}
	b.Run(fmt.Sprintf("xfs_quota-%dtrees", benchTrees/50), func(b *testing.B) {
		for b.Loop() {
			for _, dir := range trees(b, benchTrees/50) {
				nextID++
				xfsQuota(b, fmt.Sprintf("project -s -p %s %d", dir, nextID))
				xfsQuota(b, fmt.Sprintf("limit -p bhard=10m %d", nextID))
			}
		}
	})
}
