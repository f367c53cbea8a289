package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/fault"
	"github.com/xfsq/xfsq/internal/testsupport/kerneltest"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/quota/xfs"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

func TestKernel(t *testing.T) {
	cases := []kerneltest.Case{
		{Name: "AddThenWritePastTheLimitFails", Run: testXFSAddAndEnforce},
		{Name: "DoctorFindsAndFixesKernelDrift", Run: testXFSDoctor},
		{Name: "AddKilledAtEveryStepLeavesNoKernelID", Run: testXFSAddKilled},
		{Name: "RemoveReleasesIDsOnlyWhenNoFileCarriesThem", Run: testXFSRemove},
		{Name: "ExportWorksWithXfsQuotaByName", Run: testXFSExport},
		{Name: "FilesPutIsBoundedByTheKernelAndMaxFileBytes", Run: testXFSFiles},
		{Name: "SnapshotFlagsFilesThatEscapedTheQuotaAndDoctorRetagsThem", Run: testXFSEscape},
		{Name: "HealthReadsTheKernelsQuotaFlagsNow", Run: testXFSHealthQuota},
		{Name: "AdversarialCampaignHoldsOnXFS", Run: testXFSCampaign},
		{Name: "ScratchRunStopsAtItsLimitWhileTheWorkspaceWrites", Run: testXFSScratch},
		{Name: "InboundStopsAtItsLimitWhileWorkspacesWriteAndIsXfsQuotasFigure", Run: testXFSInbound},
		{Name: "SoftGraceIsTheKernelsGraceTimer", Run: testXFSSoftGrace},
		{Name: "ProgressShowsTheShareOfTheKernelsInodes", Run: testXFSProgress},
		{Name: "ServeOverHTTPDeniesAtTheLimitAndReportsAsXfsQuota", Run: testXFSServe},
		{Name: "APassJournalsEveryLimitATenantReachedFromItsContainer", Run: testXFSPassCrossings},
	}
	kerneltest.Run(t, append(cases, ext4Cases(cases)...))
}

// soft_grace is the kernel's grace period: set with the setting, reported
// as bytes_grace_ends_at, checked and restored by doctor; once it has run
// out admission denies and the kernel refuses writes.
func testXFSSoftGrace(t *testing.T, fs *kerneltest.FS) {
	s := xfsSandbox(t, fs)
	grace := func() (time.Duration, time.Duration) {
		t.Helper()
		x, err := xfs.Open(s.root)
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		b, i, err := x.Grace()
		if err != nil {
			t.Fatal(err)
		}
		return b, i
	}
	if b, i := grace(); b != 7*24*time.Hour || i != 7*24*time.Hour {
		t.Errorf("after init the kernel's grace is %v/%v, want soft_grace's default 7d", b, i)
	}
	s.ok("settings", "set", "soft_grace", "1h")
	if b, i := grace(); b != time.Hour || i != time.Hour {
		t.Errorf("after settings set soft_grace 1h the kernel's grace is %v/%v", b, i)
	}
	s.ok("project", "add", "omni", "--bytes-soft", "1m", "--bytes-hard", "10m")
	before := time.Now()
	if _, err := kerneltest.Fill(filepath.Join(s.root, "projects/omni/f"), 2*mib); err != nil {
		t.Fatalf("a write over the soft limit within grace: %v", err)
	}
	var rows []graceRow
	s.json(&rows, "report", "--area", "workspace")
	if len(rows) != 1 || rows[0].BytesGraceEnds == nil || rows[0].BytesGraceEnds.Before(before.Add(59*time.Minute)) || rows[0].BytesGraceEnds.After(time.Now().Add(61*time.Minute)) {
		t.Errorf("report: %+v, want bytes_grace_ends_at about an hour from the write", rows)
	}
	if r := s.run("project", "check", "omni"); r.code != 0 || !strings.Contains(r.stderr, "warn") {
		t.Errorf("check within grace: exit %d %q", r.code, r.stderr)
	}
	xfsQuota(t, s.root, "timer -p -b 2h")
	if r := s.run("doctor"); r.code != 1 || !strings.Contains(r.stdout, "grace-drift") {
		t.Errorf("doctor after the grace was changed behind xfsq's back: exit %d\n%s", r.code, r.stdout)
	}
	s.ok("doctor", "--fix")
	if b, _ := grace(); b != time.Hour {
		t.Errorf("doctor --fix left the kernel's grace at %v, want soft_grace 1h", b)
	}
	// 2s, not 1s: the kernel's timer is in whole seconds, and ext4's (the
	// generic quota code's) refuses from the second it ends, so a grace of
	// 1s may end a moment after the write crossed the soft limit, while
	// the rest of that write is still being reserved.
	s.ok("settings", "set", "soft_grace", "2s")
	s.ok("project", "add", "late", "--bytes-soft", "1m", "--bytes-hard", "10m")
	if _, err := kerneltest.Fill(filepath.Join(s.root, "projects/late/f"), 2*mib); err != nil {
		t.Fatalf("a write over the soft limit within a 2s grace: %v", err)
	}
	time.Sleep(3500 * time.Millisecond)
	if r := s.run("project", "check", "late"); r.code != 3 || !strings.Contains(r.stderr, "past its grace") {
		t.Errorf("check past grace: exit %d %q, want 3", r.code, r.stderr)
	}
	if _, err := kerneltest.Fill(filepath.Join(s.root, "projects/late/g"), mib); !errors.Is(err, unix.EDQUOT) && !errors.Is(err, unix.ENOSPC) {
		t.Errorf("the kernel took a write past the grace: %v", err)
	}
	// files put asks before it writes, as the kernel would answer: refused
	// (exit 3) by the soft limit, naming when the kernel's grace ended.
	small := filepath.Join(t.TempDir(), "small")
	os.WriteFile(small, make([]byte, 64<<10), 0o644)
	if r := s.run("files", "put", "late", "h", "--from", small); r.code != 3 || !strings.Contains(r.stderr, "bytes_soft, whose grace ended") {
		t.Errorf("files put past the kernel's grace: exit %d %q, want 3 naming bytes_soft and the grace's end", r.code, r.stderr)
	}
}

// A run filling scratch/PROJECT/RUN is stopped by the kernel at the
// project's scratch limit while the project's workspace still takes
// writes; a project registered before scratch had trees gets its tree from
// doctor --fix, and from then on the kernel stops its runs too.
func testXFSScratch(t *testing.T, fs *kerneltest.FS) {
	s := xfsSandbox(t, fs)
	s.ok("project", "add", "omni", "--bytes-hard", "40m", "--scratch-bytes-hard", "5m")
	run := filepath.Join(s.root, "scratch/omni/run1")
	if err := os.Mkdir(run, 0o755); err != nil { // as the sandbox makes a run's scratch
		t.Fatal(err)
	}
	written, err := kerneltest.Fill(filepath.Join(run, "big"), 20*mib)
	if !errors.Is(err, unix.EDQUOT) && !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("a run writing 20 MiB into a 5 MiB scratch: wrote %d, err %v; want EDQUOT", written, err)
	}
	if written > 5*mib {
		t.Errorf("the run wrote %d bytes past a 5 MiB scratch limit", written)
	}
	if _, err := kerneltest.Fill(filepath.Join(s.root, "projects/omni/data"), 8*mib); err != nil {
		t.Errorf("the workspace of the project whose scratch is full could not write: %v", err)
	}
	rep := s.report()
	if sc := rep["omni/scratch"]; sc.BytesHard != 5*mib || sc.UsedBytes < 4*mib {
		t.Errorf("report's scratch row: %+v", sc)
	}
	if r := s.run("project", "check", "omni"); r.code != 3 || !strings.Contains(r.stderr, "scratch") {
		t.Errorf("check with a full scratch: exit %d %q, want 3 naming scratch", r.code, r.stderr)
	}

	// An older registration: no scratch tree in the store, no ID on the directory.
	s.ok("project", "add", "old")
	st := s.store()
	var oldID quota.ProjectID
	for _, tr := range mustTrees(t, st, "old") {
		if tr.Area == area.Scratch {
			oldID = tr.ProjectID
		}
	}
	if err := st.InTx(t.Context(), func(tx *store.Tx) error {
		if err := tx.ReleaseID(t.Context(), uuidOf(t, s.root), oldID); err != nil {
			return err
		}
		return tx.DeleteTree(t.Context(), "old", area.Scratch)
	}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	xfsQuota(t, s.root, fmt.Sprintf("limit -p bhard=0 %d", oldID))
	oldRun := filepath.Join(s.root, "scratch/old/run1")
	if err := os.MkdirAll(oldRun, 0o755); err != nil {
		t.Fatal(err)
	}
	s.ok("settings", "set", "default_scratch_quota", "4m")
	if r := s.run("doctor"); r.code != 1 || !strings.Contains(r.stdout, "missing-tree") {
		t.Fatalf("doctor on a project without its scratch tree: exit %d\n%s", r.code, r.stdout)
	}
	s.ok("doctor", "--fix")
	if _, err := kerneltest.Fill(filepath.Join(oldRun, "big"), 20*mib); !errors.Is(err, unix.EDQUOT) && !errors.Is(err, unix.ENOSPC) {
		t.Errorf("after doctor --fix, a run of the old project wrote 20 MiB past its 4 MiB scratch: %v", err)
	}
}

// The root's inbound/ is a tree of its own from init on: a channel
// staging past default_inbound_quota is stopped by the kernel while a
// project's workspace still takes writes; report's inbound row is
// xfs_quota's own figure for its ID; export names it for xfs_quota; and a
// root initialised before inbound had a tree gets it from doctor --fix,
// after which the kernel stops the channel too.
func testXFSInbound(t *testing.T, fs *kerneltest.FS) {
	s := xfsSandbox(t, fs)
	rep := s.report()
	in, ok := rep[inboundKey]
	if !ok || in.ProjectID == 0 || in.BytesHard != 10<<30 || in.Backend.Kind != fs.Type {
		t.Fatalf("report after init on XFS has no inbound row with default_inbound_quota: %+v", rep)
	}
	x, err := xfs.Open(s.root)
	if err != nil {
		t.Fatal(err)
	}
	id, inherit, err := x.TreeID(filepath.Join(s.root, "inbound"))
	x.Close()
	if err != nil || id != quota.ProjectID(in.ProjectID) || !inherit {
		t.Errorf("inbound/ carries project %d (inherit %v, %v), want its tree's ID %d with PROJINHERIT", id, inherit, err, in.ProjectID)
	}
	s.ok("settings", "set", "default_inbound_quota", "5m")
	s.ok("project", "add", "omni", "--bytes-hard", "40m")
	ch := filepath.Join(s.root, "inbound/chan1")
	if err := os.Mkdir(ch, 0o755); err != nil { // as a channel makes its staging
		t.Fatal(err)
	}
	written, err := kerneltest.Fill(filepath.Join(ch, "big"), 20*mib)
	if !errors.Is(err, unix.EDQUOT) && !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("a channel writing 20 MiB into a 5 MiB inbound tree: wrote %d, err %v; want EDQUOT", written, err)
	}
	if written > 5*mib {
		t.Errorf("the channel wrote %d bytes past a 5 MiB inbound limit", written)
	}
	if _, err := kerneltest.Fill(filepath.Join(s.root, "projects/omni/data"), 8*mib); err != nil {
		t.Errorf("a workspace could not write while inbound is full: %v", err)
	}
	var only []reportRow
	s.json(&only, "report", "--area", "inbound")
	if len(only) != 1 || only[0].BytesHard != 5*mib || only[0].UsedBytes < 4*mib {
		t.Fatalf("report --area inbound: %+v, want the one inbound row, 5 MiB hard and nearly full", only)
	}
	got := [3]uint64{only[0].UsedBytes, only[0].BytesSoft, only[0].BytesHard}
	if k, ok := kerneltest.ReportBlocks(t, s.root)[quota.ProjectID(only[0].ProjectID)]; !ok || k != got {
		t.Errorf("inbound (ID %d): xfsq used/soft/hard %v, xfs_quota %v (listed %v)", only[0].ProjectID, got, k, ok)
	}
	if q := kernelQuotas(t, s.root)[quota.ProjectID(only[0].ProjectID)]; q.Inodes != only[0].UsedInodes {
		t.Errorf("inbound inodes: xfsq %d, kernel %d", only[0].UsedInodes, q.Inodes)
	}
	if out := s.ok("export", "xfs-projects"); !strings.Contains(out, fmt.Sprintf("%s-inbound:%d", sandbox.RootOwner, only[0].ProjectID)) ||
		!strings.Contains(out, fmt.Sprintf("%d:%s", only[0].ProjectID, filepath.Join(s.root, "inbound"))) {
		t.Errorf("export xfs-projects does not name the inbound tree:\n%s", out)
	}
	if r := s.run("doctor"); r.code != 0 {
		t.Errorf("doctor on a fresh XFS root: exit %d\n%s", r.code, r.stdout)
	}
	os.Remove(filepath.Join(ch, "big"))

	// A root initialised before inbound had a tree: no row, no limit.
	st := s.store()
	if err := st.InTx(t.Context(), func(tx *store.Tx) error {
		if err := tx.ReleaseID(t.Context(), uuidOf(t, s.root), quota.ProjectID(in.ProjectID)); err != nil {
			return err
		}
		return tx.DeleteProject(t.Context(), store.RootOwner)
	}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	xfsQuota(t, s.root, fmt.Sprintf("limit -p bhard=0 %d", in.ProjectID))
	if r := s.run("doctor"); r.code != 1 || !strings.Contains(r.stdout, "missing-tree") || !strings.Contains(r.stdout, "inbound") {
		t.Fatalf("doctor on a root without its inbound tree: exit %d\n%s", r.code, r.stdout)
	}
	s.ok("settings", "set", "default_inbound_quota", "4m")
	s.ok("doctor", "--fix")
	if _, err := kerneltest.Fill(filepath.Join(ch, "big2"), 20*mib); !errors.Is(err, unix.EDQUOT) && !errors.Is(err, unix.ENOSPC) {
		t.Errorf("after doctor --fix, a channel wrote 20 MiB past a 4 MiB inbound limit: %v", err)
	}
	if row := s.report()[inboundKey]; row.BytesHard != 4*mib || row.UsedBytes < 3*mib {
		t.Errorf("report's inbound row after doctor --fix: %+v", row)
	}
}

func mustTrees(t *testing.T, st *store.Store, name string) []store.Tree {
	t.Helper()
	trees, err := st.Trees(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	return trees
}

// One trial set of the adversarial campaign (campaign_test.go) on XFS with
// the kernel enforcing: the same hostile trees, races and checks.
func testXFSCampaign(t *testing.T, fs *kerneltest.FS) {
	n := 0
	runCampaign(t, func(t *testing.T) string {
		n++
		root := filepath.Join(fs.Dir, fmt.Sprint("root", n))
		if err := os.Mkdir(root, 0o755); err != nil {
			t.Fatal(err)
		}
		return root
	}, campaignBudget(time.Second))
}

const mib = 1 << 20

func xfsSandbox(t *testing.T, fs *kerneltest.FS) *testRoot {
	s := newSandbox(t, fs.Dir, "")
	var res sandbox.InitResult
	s.json(&res, "init")
	if res.Backend.Kind != fs.Type || !res.Backend.Enforced {
		t.Fatalf("init on %s with prjquota: backend %+v", fs.Type, res.Backend)
	}
	if bypass := slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "CAP_SYS_RESOURCE") }); bypass != (fs.Type == kerneltest.TypeExt4) {
		t.Errorf("init on %s: notes %q; the CAP_SYS_RESOURCE bypass is to be named on ext4 (only)", fs.Type, res.Notes)
	}
	return s
}

func kernelQuotas(t *testing.T, dir string) map[quota.ProjectID]quota.Quota {
	t.Helper()
	fs, err := xfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	all, err := fs.All()
	if err != nil {
		t.Fatal(err)
	}
	return all
}

func testXFSAddAndEnforce(t *testing.T, fs *kerneltest.FS) {
	s := xfsSandbox(t, fs)
	s.ok("project", "add", "omni", "--bytes-hard", "10m", "--cache-bytes-hard", "5m")
	s.ok("project", "add", "other", "--bytes-hard", "100m")
	written, err := kerneltest.Fill(filepath.Join(s.root, "projects/omni/big"), 20*mib)
	if !errors.Is(err, unix.EDQUOT) && !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("writing 20 MiB into a 10 MiB project: wrote %d, err %v; want EDQUOT", written, err)
	}
	if _, err := kerneltest.Fill(filepath.Join(s.root, "projects/other/big"), 20*mib); err != nil {
		t.Fatalf("the neighbour project could not write: %v", err)
	}
	if _, err := kerneltest.Fill(filepath.Join(s.root, "cache/omni/mod"), 8*mib); err == nil {
		t.Error("the cache's own 5 MiB limit did not stop an 8 MiB write")
	}
	rep := s.report()
	ws := rep["omni/workspace"]
	if ws.Backend.Kind != fs.Type || ws.BytesHard != 10*mib || ws.UsedBytes < 9*mib || ws.UsedBytes > 10*mib {
		t.Errorf("report of the full project: %+v", ws)
	}
	if got := rep["other/workspace"].UsedBytes; got < 20*mib {
		t.Errorf("report of the neighbour: %d bytes used, want 20 MiB", got)
	}
	kernel := kernelQuotas(t, s.root)
	for key, row := range rep {
		q := kernel[quota.ProjectID(row.ProjectID)]
		if q.Bytes != row.UsedBytes || q.Inodes != row.UsedInodes || q.BytesHard != row.BytesHard {
			t.Errorf("%s: report %+v, kernel %+v", key, row, q)
		}
	}
	r := s.run("project", "check", "omni")
	if r.code != 3 || !strings.Contains(r.stderr, `project "omni": disk quota exceeded (`) {
		t.Errorf("check of the full project: exit %d %q", r.code, r.stderr)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Join(s.root, "projects/omni"), &st); err != nil || st.Blocks*uint64(st.Bsize) != 10*mib {
		t.Errorf("df on the project shows %d bytes, want its 10 MiB limit", st.Blocks*uint64(st.Bsize))
	}
	// Raising the limit lets writes through again.
	s.ok("project", "set", "omni", "--bytes-hard", "40m")
	if _, err := kerneltest.Fill(filepath.Join(s.root, "projects/omni/big2"), 20*mib); err != nil {
		t.Errorf("write after raising the limit: %v", err)
	}
}

func xfsQuota(t *testing.T, mnt string, cmds ...string) string {
	t.Helper()
	args := kerneltest.XfsQuotaArgs(mnt)
	for _, c := range cmds {
		args = append(args, "-c", c)
	}
	out, err := exec.Command("xfs_quota", append(args, mnt)...).CombinedOutput()
	if err != nil {
		t.Fatalf("xfs_quota %v: %v: %s", cmds, err, out)
	}
	return string(out)
}

func testXFSDoctor(t *testing.T, fs *kerneltest.FS) {
	s := xfsSandbox(t, fs)
	s.ok("project", "add", "omni", "--bytes-hard", "10m")
	id := s.report()["omni/workspace"].ProjectID
	ws := filepath.Join(s.root, "projects/omni")
	// Drift made behind xfsq's back with the kernel tools.
	xfsQuota(t, s.root, fmt.Sprintf("limit -p bhard=1m %d", id))
	xfsQuota(t, s.root, fmt.Sprintf("project -C -p %s %d", ws, id))
	xfsQuota(t, s.root, "limit -p bhard=5m 150000") // in xfsq's range, owned by nobody
	xfsQuota(t, s.root, "limit -p bhard=5m 42")     // outside it: not xfsq's
	if err := os.Remove(filepath.Join(s.root, "cache/omni")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(s.root, "projects/stray"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := s.run("--json", "doctor")
	var findings []sandbox.Finding
	if r.code != 1 || json.Unmarshal([]byte(r.stdout), &findings) != nil {
		t.Fatalf("doctor with drift: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	kinds := map[string]bool{}
	for _, f := range findings {
		kinds[f.Kind] = true
	}
	for _, k := range []string{sandbox.WrongProjectID, sandbox.LimitsDrift, sandbox.OrphanKernelID, sandbox.ForeignKernelID, sandbox.UnmanagedDir, sandbox.MissingDirectory} {
		if !kinds[k] {
			t.Errorf("doctor missed %s; found %+v", k, findings)
		}
	}
	s.ok("doctor", "--fix")
	if r := s.run("--json", "doctor"); r.code != 0 {
		t.Errorf("doctor after --fix: exit %d %s", r.code, r.stdout)
	}
	kernel := kernelQuotas(t, s.root)
	if kernel[quota.ProjectID(id)].BytesHard != 10*mib {
		t.Errorf("limit after fix: %+v, want the recorded 10 MiB back", kernel[quota.ProjectID(id)])
	}
	if kernel[150000].BytesHard != 0 {
		t.Errorf("orphan ID 150000 still limited: %+v", kernel[150000])
	}
	if kernel[42].BytesHard != 5*mib {
		t.Errorf("doctor --fix touched ID 42, which is not xfsq's: %+v", kernel[42])
	}
	f, err := xfs.Open(s.root)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got, inherit, _ := f.TreeID(ws); got != quota.ProjectID(id) || !inherit {
		t.Errorf("tree root after fix: project %d inherit %v, want %d", got, inherit, id)
	}
	cacheID := s.report()["omni/cache"].ProjectID
	if got, inherit, err := f.TreeID(filepath.Join(s.root, "cache/omni")); err != nil || got != quota.ProjectID(cacheID) || !inherit {
		t.Errorf("recreated cache tree: project %d inherit %v (%v), want %d", got, inherit, err, cacheID)
	}
	var evs []sandbox.Event
	s.json(&evs, "events", "--type", "doctor.repaired")
	if len(evs) != 4 {
		t.Errorf("%d doctor.repaired events, want 4 (ID, limits, orphan, missing directory)", len(evs))
	}
}

func testXFSAddKilled(t *testing.T, fs *kerneltest.FS) {
	s := xfsSandbox(t, fs)
	inboundID := quota.ProjectID(s.report()[inboundKey].ProjectID) // init's, and no add's to undo
	for _, point := range sandbox.AddFaultPoints {
		killed := *s
		killed.env = append(append([]string{}, s.env...), fault.Env+"="+point)
		if r := killed.run("project", "add", "omni", "--bytes-hard", "10m"); !r.signaled {
			t.Fatalf("add did not die at %s: exit %d %q", point, r.code, r.stderr)
		}
		s.ok("doctor", "--fix")
		all := kernelQuotas(t, s.root)
		delete(all, inboundID)
		if len(all) != 0 {
			t.Errorf("after a crash at %s and doctor --fix, the kernel still knows IDs: %+v", point, all)
		}
		ids, _ := s.store().IDs(t.Context(), uuidOf(t, s.root))
		ids = slices.DeleteFunc(ids, func(r store.IDRecord) bool { return r.ProjectID == inboundID })
		if len(ids) != 0 {
			t.Errorf("after a crash at %s, registered IDs left: %+v", point, ids)
		}
		for _, d := range []string{"projects/omni", "cache/omni"} {
			if _, err := os.Stat(filepath.Join(s.root, d)); !os.IsNotExist(err) {
				t.Errorf("after a crash at %s, %s is left", point, d)
			}
		}
	}
	s.ok("project", "add", "omni")
}

func uuidOf(t *testing.T, dir string) string {
	f, err := xfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u, err := f.UUID()
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func testXFSRemove(t *testing.T, fs *kerneltest.FS) {
	s := xfsSandbox(t, fs)
	s.ok("project", "add", "gone")
	s.ok("project", "add", "kept")
	kerneltest.Fill(filepath.Join(s.root, "projects/gone/f"), mib)
	kerneltest.Fill(filepath.Join(s.root, "projects/kept/f"), mib)
	keptID := s.report()["kept/workspace"].ProjectID
	s.ok("project", "rm", "gone", "--purge")
	var res sandbox.RemoveResult
	s.json(&res, "project", "rm", "kept")
	if len(res.KeptIDs) != len(area.OfProject) {
		t.Errorf("rm without purge kept IDs %v, want every tree's ID (files still carry them)", res.KeptIDs)
	}
	ids, _ := s.store().IDs(t.Context(), uuidOf(t, s.root))
	ids = slices.DeleteFunc(ids, func(r store.IDRecord) bool { return r.Owner == sandbox.RootOwner+"/"+area.Inbound })
	if len(ids) != len(area.OfProject) || ids[0].ProjectID != quota.ProjectID(keptID) || !strings.HasPrefix(ids[0].Owner, "removed:kept/") {
		t.Errorf("registry after rm: %+v; want only kept's IDs, marked removed", ids)
	}
	// A new project must not be charged for the kept files.
	s.ok("project", "add", "new")
	if got := s.report()["new/workspace"]; got.ProjectID == keptID || got.UsedBytes > 64*1024 {
		t.Errorf("new project reuses a kept ID or is charged for its files: %+v", got)
	}
	if r := s.run("doctor", "--fix"); !strings.Contains(r.stdout, "kept-id") || !strings.Contains(r.stdout, "still carry it") {
		t.Errorf("doctor must report the kept IDs as waiting: %q", r.stdout)
	}
	os.RemoveAll(filepath.Join(s.root, "projects/kept"))
	os.RemoveAll(filepath.Join(s.root, "cache/kept"))
	os.RemoveAll(filepath.Join(s.root, "scratch/kept"))
	s.ok("doctor", "--fix")
	ids, _ = s.store().IDs(t.Context(), uuidOf(t, s.root))
	for _, r := range ids {
		if strings.HasPrefix(r.Owner, "removed:") {
			t.Errorf("ID %d still reserved after its files were deleted and doctor --fix ran", r.ProjectID)
		}
	}
}

func testXFSExport(t *testing.T, fs *kerneltest.FS) {
	s := xfsSandbox(t, fs)
	s.ok("project", "add", "omni", "--bytes-hard", "10m")
	etc := t.TempDir()
	projects, projid := filepath.Join(etc, "projects"), filepath.Join(etc, "projid")
	os.WriteFile(projects, []byte("# mine\n42:/srv/legacy\n"), 0o644)
	os.WriteFile(projid, []byte("legacy:42\n"), 0o644)
	for range 2 { // twice: nothing is duplicated
		s.ok("export", "xfs-projects", "--write", "--projects-file", projects, "--projid-file", projid)
	}
	got, _ := os.ReadFile(projid)
	if strings.Count(string(got), "omni-workspace:") != 1 || !strings.Contains(string(got), "legacy:42") {
		t.Errorf("projid after two writes:\n%s", got)
	}
	out, err := exec.Command("xfs_quota", append(kerneltest.XfsQuotaArgs(s.root), "-D", projects, "-P", projid, "-c", "report -p -b", s.root)...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "omni-workspace") || !strings.Contains(string(out), "omni-cache") {
		t.Errorf("xfs_quota does not know the projects by name: %v\n%s", err, out)
	}
}

func testXFSFiles(t *testing.T, fs *kerneltest.FS) {
	s := xfsSandbox(t, fs)
	s.ok("project", "add", "omni", "--bytes-hard", "10m")
	small := filepath.Join(t.TempDir(), "small")
	os.WriteFile(small, []byte("kept"), 0o644)
	s.ok("files", "put", "omni", "f", "--from", small)
	// A stream past the hard limit: the kernel refuses it, xfsq reports the
	// limit (exit 3) and the old content stays.
	cmd := exec.Command(os.Getenv(envBinary), "--root", s.root, "files", "put", "omni", "f")
	cmd.Env = append(os.Environ(), s.env...)
	cmd.Stdin = strings.NewReader(strings.Repeat("x", 20*mib))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(string(out), "disk quota exceeded") {
		t.Errorf("put of 20 MiB into 10 MiB on XFS: %v %q; want exit 3", err, out)
	}
	if got, _ := os.ReadFile(filepath.Join(s.root, "projects/omni/f")); string(got) != "kept" {
		t.Errorf("the refused write changed the file to %d bytes", len(got))
	}
	if entries, _ := os.ReadDir(filepath.Join(s.root, "projects/omni")); len(entries) != 3 {
		t.Errorf("left behind in the tree: %v", entries)
	}
	// The temporary file is gone; the kernel frees its blocks in the
	// background (inodegc), so give the count a moment to drain.
	id := quota.ProjectID(s.report()["omni/workspace"].ProjectID)
	var held uint64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var st unix.Statfs_t
		unix.Statfs(s.root, &st) // pushes inodegc
		if held = kernelQuotas(t, s.root)[id].Bytes; held <= 64*1024 {
			break
		}
	}
	if held > 64*1024 {
		t.Errorf("the refused write still holds %d bytes of quota", held)
	}
	// The per-write limit holds on XFS too.
	s.ok("settings", "set", "max_file_bytes", "1m")
	big := filepath.Join(t.TempDir(), "big")
	os.WriteFile(big, make([]byte, 2*mib), 0o644)
	if r := s.run("files", "put", "omni", "g", "--from", big); r.code != 3 || !strings.Contains(r.stderr, "max_file_bytes") {
		t.Errorf("put past max_file_bytes on XFS: exit %d %q", r.code, r.stderr)
	}
}

func testXFSEscape(t *testing.T, fs *kerneltest.FS) {
	s := xfsSandbox(t, fs)
	s.ok("project", "add", "omni")
	s.ok("project", "add", "clean")
	ws := filepath.Join(s.root, "projects/omni")
	os.MkdirAll(filepath.Join(ws, "kept"), 0o755)
	os.MkdirAll(filepath.Join(ws, "escaped"), 0o755)
	kerneltest.Fill(filepath.Join(ws, "kept/f"), 4*mib)
	kerneltest.Fill(filepath.Join(ws, "escaped/f"), 4*mib)
	kerneltest.Fill(filepath.Join(s.root, "projects/clean/f"), 4*mib)
	id := s.report()["omni/workspace"].ProjectID
	// What a file's owner can do in the initial user namespace: move it out
	// of the quota by changing its project ID.
	xfsQuota(t, s.root, fmt.Sprintf("project -C -p %s %d", filepath.Join(ws, "escaped"), id))
	s.ok("snapshot", "--all")
	var rows []struct {
		Project, Area string
		UsedBytes     uint64  `json:"used_bytes"`
		WalkBytes     *uint64 `json:"walk_bytes"`
		Escape        string  `json:"escape"`
	}
	s.json(&rows, "report")
	for _, r := range rows {
		switch r.Project + "/" + r.Area {
		case "omni/workspace":
			if r.UsedBytes > 5*mib || r.WalkBytes == nil || *r.WalkBytes < 8*mib || !strings.Contains(r.Escape, "left the quota") {
				t.Errorf("escaped files: used %d (kernel), walk %v, escape %q", r.UsedBytes, r.WalkBytes, r.Escape)
			}
		case "clean/workspace":
			if r.WalkBytes != nil || r.Escape != "" || r.UsedBytes < 4*mib {
				t.Errorf("a clean tree flagged: %+v", r)
			}
		}
	}
	if r := s.run("doctor"); r.code != 1 || !strings.Contains(r.stdout, "quota-escape omni workspace") {
		t.Errorf("doctor: exit %d %q", r.code, r.stdout)
	}
	s.ok("doctor", "--fix")
	if got := s.report()["omni/workspace"].UsedBytes; got < 8*mib {
		t.Errorf("after doctor --fix the kernel counts %d bytes, want the escaped 4 MiB back (8 MiB)", got)
	}
	if out := s.ok("doctor"); !strings.Contains(out, "no drift") {
		t.Errorf("doctor after the fix: %q", out)
	}
}

// On XFS the progress line compares what the walk has seen with the
// inodes the kernel charges to the tree's project ID.
func testXFSProgress(t *testing.T, fs *kerneltest.FS) {
	s := xfsSandbox(t, fs)
	s.ok("project", "add", "omni")
	ws := filepath.Join(fs.Dir, "projects/omni")
	for i := range 200 {
		os.WriteFile(filepath.Join(ws, fmt.Sprint("f", i)), nil, 0o644)
	}
	ensurePTYs(t)
	out := onTerminal(t, s, "", "snapshot", "omni", "--area", "workspace")
	if !strings.Contains(out, "omni workspace: 200 files") || !regexp.MustCompile(`(99|100)% of the kernel's 20\d inodes`).MatchString(out) {
		t.Errorf("no share of the kernel's inode count in the progress line:\n%q", out)
	}
}

// ensurePTYs gives the test kernel pseudo-terminals for script(1): its
// minimal /dev has no devpts mounted.
func ensurePTYs(t *testing.T) {
	// /dev/ptmx finds its terminals in the devpts mounted at /dev/pts
	// beside it; without one, script(1) opens a master whose slave has no name.
	if _, err := os.Stat("/dev/pts/ptmx"); err != nil {
		os.MkdirAll("/dev/pts", 0o755)
		if err := unix.Mount("devpts", "/dev/pts", "devpts", 0, "ptmxmode=0666,mode=0620"); err != nil {
			t.Fatalf("mount devpts for a pseudo-terminal: %v", err)
		}
	}
	if _, err := os.Stat("/dev/ptmx"); err != nil {
		if err := os.Symlink("pts/ptmx", "/dev/ptmx"); err != nil {
			t.Fatalf("link /dev/ptmx: %v", err)
		}
	}
}
