package xfs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/testsupport/kerneltest"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/quota/xfs/fsxattr"
	"github.com/xfsq/xfsq/quota/xfs/quotactl"
	"github.com/xfsq/xfsq/store"
)

const mib = 1 << 20

// Helper-process mode for the cross-process allocation case: the test binary
// re-runs itself with these variables set and allocates IDs.
const (
	envHelperMount = "XFSQ_TEST_ALLOC_MOUNT"
	envHelperStore = "XFSQ_TEST_ALLOC_STORE"
	envHelperCount = "XFSQ_TEST_ALLOC_COUNT"
)

func TestMain(m *testing.M) {
	if mnt := os.Getenv(envHelperMount); mnt != "" {
		os.Exit(allocHelper(mnt))
	}
	os.Exit(m.Run())
}

func allocHelper(mnt string) int {
	fs, err := Open(mnt)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	n, _ := strconv.Atoi(os.Getenv(envHelperCount))
	st, err := store.Open(context.Background(), os.Getenv(envHelperStore), "kernel-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	a := &Allocator{FS: fs, Range: DefaultRange, ProjectFiles: []string{}}
	for range n {
		id, err := allocate(st, a, fmt.Sprintf("helper-%d", os.Getpid()))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(id)
	}
	return 0
}

// allocate hands out an ID as sandbox.Manager.Add does: the IDs in use on
// the filesystem and named by hand excluded, the store reserving the
// lowest other one in a transaction.
func allocate(st *store.Store, a *Allocator, owner string) (quota.ProjectID, error) {
	uuid, err := a.FS.UUID()
	if err != nil {
		return 0, err
	}
	excluded, err := a.Excluded()
	if err != nil {
		return 0, err
	}
	var id quota.ProjectID
	err = st.InTx(context.Background(), func(tx *store.Tx) error {
		var err error
		id, err = tx.ReserveID(context.Background(), uuid, a.Range, excluded, owner)
		return err
	})
	return id, err
}

// release gives an ID back as project's rollback and removal do: only once
// the kernel shows that no file carries it.
func release(st *store.Store, fs *FS, id quota.ProjectID) error {
	q, err := fs.WaitEmpty(id, 3*time.Second)
	if err != nil {
		return err
	}
	if q.OwnsData() {
		return fmt.Errorf("%w: %d bytes in %d inodes still carry ID %d", quota.ErrInUse, q.Bytes, q.Inodes, id)
	}
	uuid, err := fs.UUID()
	if err != nil {
		return err
	}
	return st.InTx(context.Background(), func(tx *store.Tx) error { return tx.ReleaseID(context.Background(), uuid, id) })
}

// openStore is an SQLite store in a temporary directory.
func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "xfsq.db"), "kernel-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestKernel(t *testing.T) {
	cases := []kerneltest.Case{
		{Name: "ByteHardLimitStopsWritesNeighbourKeepsWriting", Run: testByteHardLimit},
		{Name: "InodeHardLimitStopsCreation", Run: testInodeHardLimit},
		{Name: "NewEntriesInheritExistingAreCounted", Run: testInheritAndCount},
		{Name: "AssignSkipsSymlinksSpecialFilesAndMounts", Run: testAssignBoundaries},
		{Name: "RenameAndLinkAcrossTreesFailEXDEV", Run: testCrossTreeEXDEV},
		{Name: "StatfsReportsHardLimit", Run: testStatfsLimit},
		{Name: "SoftLimitStartsGrace", Run: testSoftLimitGrace},
		{Name: "MatchesXfsQuotaReportFor50Trees", Run: testOracle},
		{Name: "AllocationSkipsInUseAndProjidIDs", Run: testAllocationSkips},
		{Name: "EightProcessesAllocate400DistinctIDs", Run: testConcurrentAllocation},
		{Name: "ClearThenReuse", Run: testClearThenReuse},
		{Name: "ParentWithInheritFlagIsRefused", Run: testParentInherit},
		{Name: "NonXFSDirectoryIsUnsupported", Run: testNonXFS},
		{Name: "XFSWithoutPrjquotaIsUnsupported", Run: testNoPrjquota},
		{Name: "QuotactlOnTheBlockDeviceWorksToo", Run: testDeviceFallback},
		{Name: "ErrorsNameTreeIDSyscallAndErrno", Run: testErrorMessages},
	}
	// What holds on XFS holds on ext4 made for project quotas, where the
	// case's writes run without CAP_SYS_RESOURCE, as a container's do.
	for _, c := range cases {
		if ext4Cases[c.Name] {
			cases = append(cases, kerneltest.OnExt4(c))
		}
	}
	cases = append(cases,
		kerneltest.Case{Name: "Ext4IsDetectedWithItsUUIDAndMaximum", Run: testExt4Detected, FS: kerneltest.TypeExt4},
		kerneltest.Case{Name: "Ext4WithoutPrjquotaIsUnsupported", Run: testExt4NoPrjquota, FS: kerneltest.TypeExt4},
		kerneltest.Case{Name: "Ext4RootWithCapSysResourceBypassesHardLimit", Run: testExt4Bypass, FS: kerneltest.TypeExt4},
	)
	kerneltest.Run(t, cases)
}

// ext4Cases are the cases above that apply to ext4 as they are: the
// others test XFS's own answers (its mount options, its messages).
var ext4Cases = map[string]bool{
	"ByteHardLimitStopsWritesNeighbourKeepsWriting": true,
	"InodeHardLimitStopsCreation":                   true,
	"NewEntriesInheritExistingAreCounted":           true,
	"AssignSkipsSymlinksSpecialFilesAndMounts":      true,
	"RenameAndLinkAcrossTreesFailEXDEV":             true,
	"StatfsReportsHardLimit":                        true,
	"SoftLimitStartsGrace":                          true,
	"MatchesXfsQuotaReportFor50Trees":               true,
	"AllocationSkipsInUseAndProjidIDs":              true,
	"ClearThenReuse":                                true,
	"ParentWithInheritFlagIsRefused":                true,
	"QuotactlOnTheBlockDeviceWorksToo":              true,
}

// newTree makes base/name (base without PROJINHERIT), assigns id and limits.
func newTree(t *testing.T, fs *FS, name string, id quota.ProjectID, l quota.Limits) string {
	t.Helper()
	dir := filepath.Join(fs.MountPoint(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fs.Assign(dir, id); err != nil {
		t.Fatal(err)
	}
	if err := fs.SetLimits(id, l); err != nil {
		t.Fatal(err)
	}
	return dir
}

func open(t *testing.T, kfs *kerneltest.FS) *FS {
	t.Helper()
	fs, err := Open(kfs.Dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	return fs
}

func isQuotaErr(err error) bool { return errors.Is(err, unix.EDQUOT) || errors.Is(err, unix.ENOSPC) }

func testByteHardLimit(t *testing.T, kfs *kerneltest.FS) {
	fs := open(t, kfs)
	full := newTree(t, fs, "full", 101, quota.Limits{BytesHard: 10 * mib})
	neighbour := newTree(t, fs, "neighbour", 102, quota.Limits{BytesHard: 100 * mib})

	written, err := kerneltest.Fill(filepath.Join(full, "big"), 20*mib)
	if !isQuotaErr(err) {
		t.Fatalf("writing 20 MiB into a 10 MiB tree: wrote %d bytes, err %v; want EDQUOT or ENOSPC", written, err)
	}
	if written > 10*mib {
		t.Errorf("wrote %d bytes past a 10 MiB hard limit", written)
	}
	if _, err := kerneltest.Fill(filepath.Join(neighbour, "big"), 20*mib); err != nil {
		t.Fatalf("neighbour tree could not write 20 MiB of its 100 MiB: %v", err)
	}
	q, err := fs.Get(101)
	if err != nil {
		t.Fatal(err)
	}
	if q.Bytes > 10*mib || q.Bytes < 9*mib {
		t.Errorf("usage of the full tree = %d bytes, want just under 10 MiB", q.Bytes)
	}
}

func testInodeHardLimit(t *testing.T, kfs *kerneltest.FS) {
	fs := open(t, kfs)
	dir := newTree(t, fs, "tree", 201, quota.Limits{InodesHard: 10})
	created := 0
	var err error
	for i := range 20 {
		var f *os.File
		if f, err = os.Create(filepath.Join(dir, fmt.Sprint("f", i))); err != nil {
			break
		}
		f.Close()
		created++
	}
	if !isQuotaErr(err) {
		t.Fatalf("creating 20 files under an inode limit of 10: created %d, err %v; want EDQUOT or ENOSPC", created, err)
	}
	// The tree's own directory is one of the 10 inodes.
	if created != 9 {
		t.Errorf("created %d files, want 9 (10 inodes minus the directory)", created)
	}
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); !isQuotaErr(err) {
		t.Errorf("mkdir past the inode limit: %v, want EDQUOT or ENOSPC", err)
	}
}

func projidOf(t *testing.T, path string) (uint32, bool) {
	t.Helper()
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	a, err := fsxattr.Get(fd)
	if err != nil {
		t.Fatal(err)
	}
	return a.ProjID, a.XFlags&fsxattr.FlagProjInherit != 0
}

func testInheritAndCount(t *testing.T, kfs *kerneltest.FS) {
	fs := open(t, kfs)
	dir := filepath.Join(fs.MountPoint(), "tree")
	// Contents that exist before assignment: 1 + 3 dirs, 4 files of 1 MiB.
	for _, d := range []string{"a", "a/b", "c"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"top", "a/one", "a/b/two", "c/three"} {
		if _, err := kerneltest.Fill(filepath.Join(dir, f), mib); err != nil {
			t.Fatal(err)
		}
	}
	if err := fs.Assign(dir, 301); err != nil {
		t.Fatal(err)
	}
	q, err := fs.Get(301)
	if err != nil {
		t.Fatal(err)
	}
	if q.Inodes != 8 || q.Bytes < 4*mib || q.Bytes > 4*mib+64*1024 {
		t.Errorf("after assigning existing contents: %d inodes, %d bytes; want 8 inodes and about 4 MiB", q.Inodes, q.Bytes)
	}
	for _, p := range []string{"", "a", "a/b", "c"} {
		if id, inherit := projidOf(t, filepath.Join(dir, p)); id != 301 || !inherit {
			t.Errorf("%s: project %d inherit %v, want 301 with PROJINHERIT", p, id, inherit)
		}
	}
	// Created after assignment: inherit the ID from their directory.
	if err := os.MkdirAll(filepath.Join(dir, "a/b/new/deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := kerneltest.Fill(filepath.Join(dir, "a/b/new/deeper/file"), 2*mib); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a/b/new", "a/b/new/deeper", "a/b/new/deeper/file"} {
		if id, _ := projidOf(t, filepath.Join(dir, p)); id != 301 {
			t.Errorf("%s created after assignment has project %d, want 301", p, id)
		}
	}
	q2, err := fs.Get(301)
	if err != nil {
		t.Fatal(err)
	}
	if q2.Inodes != q.Inodes+3 || q2.Bytes < q.Bytes+2*mib {
		t.Errorf("after creating 3 entries with 2 MiB: %d inodes %d bytes, want %d inodes and %d+ bytes",
			q2.Inodes, q2.Bytes, q.Inodes+3, q.Bytes+2*mib)
	}
}

func testAssignBoundaries(t *testing.T, kfs *kerneltest.FS) {
	fs := open(t, kfs)
	dir := filepath.Join(fs.MountPoint(), "tree")
	canary := filepath.Join(fs.MountPoint(), "canary")
	for _, d := range []string{dir, canary, filepath.Join(dir, "mnt")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(canary, "file"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, link := range []struct{ target, name string }{{canary, "to-canary-dir"}, {filepath.Join(canary, "file"), "to-canary-file"}, {"/nonexistent", "dangling"}} {
		if err := os.Symlink(link.target, filepath.Join(dir, link.name)); err != nil {
			t.Fatal(err)
		}
	}
	// A FIFO nobody writes to: opening it without O_NONBLOCK would hang the walk.
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", filepath.Join(dir, "mnt"), "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(filepath.Join(dir, "mnt"), unix.MNT_DETACH)
	if err := os.WriteFile(filepath.Join(dir, "mnt", "other-fs"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}

	done := make(chan error, 1)
	go func() { done <- fs.Assign(dir, 401) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Assign did not return within 30s (blocked on the FIFO?)")
	}
	for _, p := range []string{canary, filepath.Join(canary, "file")} {
		if id, _ := projidOf(t, p); id != 0 {
			t.Errorf("%s, reached only through a symlink in the tree, got project %d", p, id)
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Join(dir, "mnt"), &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		t.Fatalf("tmpfs mount inside the tree vanished: %v", err)
	}
}

func testCrossTreeEXDEV(t *testing.T, kfs *kerneltest.FS) {
	fs := open(t, kfs)
	a := newTree(t, fs, "a", 501, quota.Limits{BytesHard: 100 * mib})
	b := newTree(t, fs, "b", 502, quota.Limits{BytesHard: 100 * mib})
	src := filepath.Join(a, "file")
	if err := os.WriteFile(src, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(src, filepath.Join(b, "file")); !errors.Is(err, unix.EXDEV) {
		t.Errorf("rename across trees: %v, want EXDEV", err)
	}
	if err := os.Link(src, filepath.Join(b, "link")); !errors.Is(err, unix.EXDEV) {
		t.Errorf("link across trees: %v, want EXDEV", err)
	}
	if err := os.Rename(src, filepath.Join(a, "renamed")); err != nil {
		t.Errorf("rename within a tree: %v", err)
	}
}

func testStatfsLimit(t *testing.T, kfs *kerneltest.FS) {
	fs := open(t, kfs)
	dir := newTree(t, fs, "tree", 601, quota.Limits{BytesHard: 37 * mib, InodesHard: 1234})
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if size := st.Blocks * uint64(st.Bsize); size != 37*mib {
		t.Errorf("statfs size on the tree = %d, want the 37 MiB hard limit", size)
	}
	if st.Files != 1234 {
		t.Errorf("statfs files on the tree = %d, want the inode hard limit 1234", st.Files)
	}
}

func testSoftLimitGrace(t *testing.T, kfs *kerneltest.FS) {
	fs := open(t, kfs)
	if err := fs.SetGrace(time.Hour, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	if b, i, err := fs.Grace(); err != nil || b != time.Hour || i != 2*time.Hour {
		t.Errorf("Grace() = %v, %v, %v; want the 1h and 2h just set", b, i, err)
	}
	dir := newTree(t, fs, "tree", 701, quota.Limits{BytesSoft: mib, BytesHard: 10 * mib})
	before := time.Now()
	if _, err := kerneltest.Fill(filepath.Join(dir, "f"), 2*mib); err != nil {
		t.Fatalf("writing over the soft limit must succeed within grace: %v", err)
	}
	q, err := fs.Get(701)
	if err != nil {
		t.Fatal(err)
	}
	if ends := q.BytesGraceEnds.Time(); ends.Before(before.Add(59*time.Minute)) || ends.After(time.Now().Add(61*time.Minute)) {
		t.Errorf("grace ends %v, want about an hour from now", ends)
	}
}

// xfsQuotaReport runs the oracle: `xfs_quota -x -c 'report -p -b -i -n'`,
// whose block columns are KiB — on ext4, repquota -P, the quota tools' own.
func xfsQuotaReport(t testing.TB, kfs *kerneltest.FS) map[quota.ProjectID]quota.Quota {
	if kfs.Type == kerneltest.TypeExt4 {
		return kerneltest.Repquota(t, kfs.Dir)
	}
	mnt := kfs.Dir
	out, err := exec.Command("xfs_quota", "-x", "-c", "report -p -b -i -n", mnt).CombinedOutput()
	if err != nil {
		t.Fatalf("xfs_quota report: %v: %s", err, out)
	}
	row := regexp.MustCompile(`^#(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\d+\s+\[[^\]]*\]\s+(\d+)\s+(\d+)\s+(\d+)\s`)
	got := map[quota.ProjectID]quota.Quota{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		m := row.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n := make([]uint64, len(m))
		for i := 1; i < len(m); i++ {
			n[i], _ = strconv.ParseUint(m[i], 10, 64)
		}
		got[quota.ProjectID(n[1])] = quota.Quota{ID: quota.ProjectID(n[1]),
			Usage:  quota.Usage{Bytes: n[2] * 1024, Inodes: n[5]},
			Limits: quota.Limits{BytesSoft: n[3] * 1024, BytesHard: n[4] * 1024, InodesSoft: n[6], InodesHard: n[7]}}
	}
	return got
}

func testOracle(t *testing.T, kfs *kerneltest.FS) {
	fs := open(t, kfs)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	want := map[quota.ProjectID]quota.Limits{}
	for i := range 50 {
		id := quota.ProjectID(1000 + rng.IntN(100000))
		for want[id] != (quota.Limits{}) {
			id++
		}
		soft := uint64(1+rng.IntN(500)) * mib
		l := quota.Limits{BytesSoft: soft, BytesHard: soft + uint64(rng.IntN(500))*mib,
			InodesSoft: uint64(100 + rng.IntN(1000)), InodesHard: uint64(1100 + rng.IntN(1000))}
		want[id] = l
		dir := newTree(t, fs, fmt.Sprint("t", i), id, l)
		for f := range rng.IntN(12) {
			sub := dir
			if rng.IntN(3) == 0 {
				sub = filepath.Join(dir, fmt.Sprint("d", f))
				os.Mkdir(sub, 0o755)
			}
			data := make([]byte, rng.IntN(300*1024))
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprint("f", f)), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	unix.Sync()
	oracle := xfsQuotaReport(t, kfs)
	ours, err := fs.All()
	if err != nil {
		t.Fatal(err)
	}
	for id, l := range want {
		o, ok := oracle[id]
		if !ok {
			t.Errorf("project %d missing from xfs_quota report", id)
			continue
		}
		q := ours[id]
		if q.Limits != l {
			t.Errorf("project %d: xfsq reads limits %+v, set %+v", id, q.Limits, l)
		}
		if q.Limits != o.Limits || q.Bytes != o.Bytes || q.Inodes != o.Inodes {
			t.Errorf("project %d: xfsq %+v %d B %d inodes; xfs_quota %+v %d B %d inodes",
				id, q.Limits, q.Bytes, q.Inodes, o.Limits, o.Bytes, o.Inodes)
		}
		single, err := fs.Get(id)
		if err != nil || single.Limits != q.Limits || single.Bytes != q.Bytes || single.Inodes != q.Inodes {
			t.Errorf("project %d: Get %+v (%v) differs from the enumeration %+v", id, single, err, q)
		}
	}
	for id := range ours {
		if _, ok := want[id]; !ok {
			t.Errorf("enumeration returned project %d that no tree has", id)
		}
	}
	// The slice form (what a report ranges over) holds the same figures,
	// in ascending ID order, appended after what dst already held.
	kept := quota.Quota{ID: 7, Usage: quota.Usage{Bytes: 1}}
	list, err := fs.AppendAll([]quota.Quota{kept})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1+len(ours) || list[0] != kept {
		t.Fatalf("AppendAll onto one entry: %d entries, first %+v; want %d, first %+v", len(list), list[0], 1+len(ours), kept)
	}
	for i, q := range list[1:] {
		if i > 0 && q.ID <= list[i].ID {
			t.Errorf("AppendAll: project %d after %d, want ascending IDs", q.ID, list[i].ID)
		}
		if ours[q.ID] != q {
			t.Errorf("project %d: AppendAll %+v, All %+v", q.ID, q, ours[q.ID])
		}
		if o := oracle[q.ID]; q.Limits != o.Limits || q.Bytes != o.Bytes || q.Inodes != o.Inodes {
			t.Errorf("project %d: AppendAll %+v; xfs_quota %+v %d B %d inodes", q.ID, q, o.Limits, o.Bytes, o.Inodes)
		}
	}
	testWithAll(t, fs, list[1:])
}

// testWithAll: the lent form (what Report and the scrape use) holds what
// AppendAll does, a later pass into the same buffer holds the kernel's new
// figures, a warm pass allocates nothing, and fn's error comes back as is.
func testWithAll(t *testing.T, fs *FS, want []quota.Quota) {
	lent := func() []quota.Quota {
		var got []quota.Quota
		if err := fs.WithAll(func(all []quota.Quota) error {
			got = slices.Clone(all)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := lent(); !slices.Equal(got, want) {
		t.Fatalf("WithAll lent %d entries, AppendAll returned %d, or they differ:\n%+v\n%+v", len(got), len(want), got, want)
	}
	changed := want[len(want)/2]
	l := quota.Limits{BytesHard: changed.BytesHard + mib, InodesHard: changed.InodesHard + 1}
	if err := fs.SetLimits(changed.ID, l); err != nil {
		t.Fatal(err)
	}
	for _, q := range lent() {
		if q.ID == changed.ID && q.Limits != l {
			t.Errorf("project %d: the pass after SetLimits lent %+v, want %+v", q.ID, q.Limits, l)
		}
	}
	if n := testing.AllocsPerRun(20, func() { fs.WithAll(func([]quota.Quota) error { return nil }) }); n >= 1 {
		t.Errorf("a warm WithAll pass allocates %.1f times, want nothing", n)
	}
	mine := errors.New("fn failed")
	if err := fs.WithAll(func([]quota.Quota) error { return mine }); err != mine {
		t.Errorf("WithAll returned %v, want fn's own error", err)
	}
}

func testAllocationSkips(t *testing.T, kfs *kerneltest.FS) {
	fs := open(t, kfs)
	first := DefaultRange.First
	newTree(t, fs, "used-by-hand", first, quota.Limits{BytesHard: mib})
	newTree(t, fs, "also-used", first+1, quota.Limits{})
	etc := t.TempDir()
	projid, projects := filepath.Join(etc, "projid"), filepath.Join(etc, "projects")
	os.WriteFile(projid, fmt.Appendf(nil, "# by hand\nlegacy:%d\n", first+2), 0o644)
	os.WriteFile(projects, fmt.Appendf(nil, "%d:/srv/old\n", first+3), 0o644)
	st := openStore(t)
	a := &Allocator{FS: fs, Range: DefaultRange, ProjectFiles: []string{projid, projects}}
	got, err := allocate(st, a, "p")
	if err != nil {
		t.Fatal(err)
	}
	if got != first+4 {
		t.Errorf("allocated %d, want %d (skipping 2 IDs in use, 1 in projid, 1 in projects)", got, first+4)
	}
	next, err := allocate(st, a, "q")
	if err != nil || next != first+5 {
		t.Errorf("second allocation %d (%v), want %d: a reserved ID must not be handed out twice", next, err, first+5)
	}
	if _, err := allocate(st, &Allocator{FS: fs, Range: IDRange{First: 0, Last: 10}}, "x"); err == nil {
		t.Error("a range including 0 was accepted")
	}
	full := &Allocator{FS: fs, Range: IDRange{First: first, Last: first + 5}, ProjectFiles: a.ProjectFiles}
	if _, err := allocate(st, full, "x"); err == nil || !strings.Contains(err.Error(), "no free project ID") {
		t.Errorf("exhausted range: %v, want a 'no free project ID' error", err)
	}
}

func testConcurrentAllocation(t *testing.T, kfs *kerneltest.FS) {
	db := filepath.Join(t.TempDir(), "xfsq.db")
	// Created (and migrated) once, as init does, before the processes race.
	st, err := store.Open(context.Background(), db, "kernel-test")
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	const procs, each = 8, 50
	outs := make([][]byte, procs)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), envHelperMount+"="+kfs.Dir, envHelperStore+"="+db, envHelperCount+"="+fmt.Sprint(each))
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err != nil {
				t.Errorf("helper %d: %v", i, err)
			}
			outs[i] = out
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, out := range outs {
		for _, id := range strings.Fields(string(out)) {
			if seen[id] {
				t.Errorf("ID %s handed out twice", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != procs*each {
		t.Errorf("%d distinct IDs, want %d", len(seen), procs*each)
	}
}

func testClearThenReuse(t *testing.T, kfs *kerneltest.FS) {
	fs := open(t, kfs)
	st := openStore(t)
	// Two IDs, the second taken at once: IDs come after the highest in
	// use, so only a range whose top is taken hands a released one back.
	first := DefaultRange.First
	a := &Allocator{FS: fs, Range: quota.IDRange{First: first, Last: first + 1}, ProjectFiles: []string{}}
	id, err := allocate(st, a, "p")
	if err != nil {
		t.Fatal(err)
	}
	if top, err := allocate(st, a, "top"); err != nil || top != first+1 {
		t.Fatalf("the range's top: %d (%v), want %d", top, err, first+1)
	}
	dir := newTree(t, fs, "tree", id, quota.Limits{BytesHard: 10 * mib, InodesHard: 100})
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fs.Clear(id); err != nil {
		t.Fatal(err)
	}
	if q, _ := fs.Get(id); q.Limits != (quota.Limits{}) {
		t.Errorf("limits after Clear: %+v", q.Limits)
	}
	if err := release(st, fs, id); !errors.Is(err, quota.ErrInUse) {
		t.Fatalf("Release with data still carrying the ID: %v, want ErrInUse", err)
	}
	if other, _ := allocate(st, a, "q"); other == id {
		t.Fatalf("ID %d reused while it still owns data", id)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := release(st, fs, id); err != nil {
		t.Fatalf("Release after the data is gone: %v", err)
	}
	if again, err := allocate(st, a, "r"); err != nil || again != id {
		t.Errorf("after release, allocated %d (%v), want %d back", again, err, id)
	}
	if err := fs.Clear(quota.ProjectID(4000000000)); err != nil {
		t.Errorf("Clear of an ID the kernel does not know: %v, want success", err)
	}
}

func testParentInherit(t *testing.T, kfs *kerneltest.FS) {
	fs := open(t, kfs)
	base := newTree(t, fs, "poisoned", 801, quota.Limits{})
	child := filepath.Join(base, "child")
	if err := os.Mkdir(child, 0o755); err != nil {
		t.Fatal(err)
	}
	err := fs.Assign(child, 802)
	if err == nil || !strings.Contains(err.Error(), "PROJINHERIT") {
		t.Fatalf("Assign under a parent with PROJINHERIT: %v, want a refusal naming PROJINHERIT", err)
	}
	if err := fs.ClearInherit(base); err != nil {
		t.Fatal(err)
	}
	if id, inherit, _ := fs.TreeID(base); id != 0 || inherit {
		t.Errorf("after ClearInherit: project %d inherit %v", id, inherit)
	}
	if err := fs.Assign(child, 802); err != nil {
		t.Errorf("Assign after ClearInherit: %v", err)
	}
}

func testNonXFS(t *testing.T, kfs *kerneltest.FS) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	_, err := Open(dir)
	var unsupported *quota.UnsupportedError
	if !errors.As(err, &unsupported) || !strings.Contains(err.Error(), "tmpfs is not XFS") {
		t.Fatalf("Open on tmpfs: %v, want an UnsupportedError saying tmpfs is not XFS", err)
	}
}

func testNoPrjquota(t *testing.T, kfs *kerneltest.FS) {
	for _, c := range []struct{ opts, want string }{
		{"", "-o prjquota"},
		{"pqnoenforce", "does not enforce"},
	} {
		kfs.Remount(c.opts)
		_, err := Open(kfs.Dir)
		var unsupported *quota.UnsupportedError
		if !errors.As(err, &unsupported) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open on XFS mounted with %q: %v, want an UnsupportedError containing %q", c.opts, err, c.want)
		}
	}
	kfs.Remount("prjquota")
	fs, err := Open(kfs.Dir)
	if err != nil {
		t.Fatalf("after remount with prjquota: %v", err)
	}
	fs.Close()
}

// Kernels before 5.14 have no quotactl_fd; the same calls then go to the
// block device named in /proc/self/mountinfo.
func testDeviceFallback(t *testing.T, kfs *kerneltest.FS) {
	fs := open(t, kfs)
	var err error
	if fs.target, err = quotactl.DeviceTarget(fs.Device()); err != nil {
		t.Fatal(err)
	}
	dir := newTree(t, fs, "tree", 901, quota.Limits{BytesHard: 10 * mib, InodesSoft: 5})
	if _, err := kerneltest.Fill(filepath.Join(dir, "f"), 2*mib); err != nil {
		t.Fatal(err)
	}
	q, err := fs.Get(901)
	if err != nil || q.BytesHard != 10*mib || q.InodesSoft != 5 || q.Bytes < 2*mib {
		t.Fatalf("Get through the device: %+v, %v", q, err)
	}
	all, err := fs.All()
	if err != nil || all[901].Bytes != q.Bytes {
		t.Errorf("All through the device: %+v, %v", all, err)
	}
	if err := fs.Clear(901); err != nil {
		t.Errorf("Clear through the device: %v", err)
	}
	// An error names the device form of the call; a literal Target
	// (its path converted on each call) goes the same way.
	fs.target = quotactl.Target{Device: "/dev/nonexistent"}
	if err := fs.SetLimits(901, quota.Limits{}); err == nil || !strings.Contains(err.Error(), "quotactl(Q_XSETQLIM, /dev/nonexistent)") {
		t.Errorf("error through a missing device: %v", err)
	}
}

func testErrorMessages(t *testing.T, kfs *kerneltest.FS) {
	fs := open(t, kfs)
	missing := filepath.Join(fs.MountPoint(), "missing")
	err := fs.Assign(missing, 1001)
	var op *quota.OpError
	if !errors.As(err, &op) || !errors.Is(err, unix.ENOENT) {
		t.Fatalf("Assign of a missing tree: %v; want an OpError wrapping ENOENT", err)
	}
	for _, want := range []string{missing, "(project 1001)", "open", "no such file or directory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if err := fs.SetLimits(0, quota.Limits{BytesHard: 1}); err == nil || !strings.Contains(err.Error(), "ID 0") {
		t.Errorf("SetLimits(0): %v; want a refusal naming ID 0", err)
	}
	if err := fs.Assign(fs.MountPoint(), 0); err == nil {
		t.Error("Assign of ID 0 accepted")
	}
}
