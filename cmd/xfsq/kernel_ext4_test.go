package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/client"
	"github.com/xfsq/xfsq/internal/testsupport/kerneltest"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/quota/xfs"
	"github.com/xfsq/xfsq/sandbox"
)

// ext4Cases are the XFS cases that hold on ext4 made for project quotas,
// run there, and the cases of ext4's own (and the unowned space's, on both).
func ext4Cases(xfsCases []kerneltest.Case) []kerneltest.Case {
	applies := map[string]bool{
		"AddThenWritePastTheLimitFails":                                  true,
		"DoctorFindsAndFixesKernelDrift":                                 true,
		"RemoveReleasesIDsOnlyWhenNoFileCarriesThem":                     true,
		"ExportWorksWithXfsQuotaByName":                                  true,
		"FilesPutIsBoundedByTheKernelAndMaxFileBytes":                    true,
		"SnapshotFlagsFilesThatEscapedTheQuotaAndDoctorRetagsThem":       true,
		"ScratchRunStopsAtItsLimitWhileTheWorkspaceWrites":               true,
		"SoftGraceIsTheKernelsGraceTimer":                                true,
		"ProgressShowsTheShareOfTheKernelsInodes":                        true,
		"ServeOverHTTPDeniesAtTheLimitAndReportsAsXfsQuota":              true,
		"InboundStopsAtItsLimitWhileWorkspacesWriteAndIsXfsQuotasFigure": true,
		"APassJournalsEveryLimitATenantReachedFromItsContainer":          true,
	}
	var out []kerneltest.Case
	for _, c := range xfsCases {
		if applies[c.Name] {
			out = append(out, kerneltest.OnExt4(c))
		}
	}
	unowned := kerneltest.Case{Name: "ReportAndOverviewShowTheSpaceNoProjectOwns", Run: testUnowned}
	out = append(out, unowned, kerneltest.OnExt4(unowned))
	return append(out,
		kerneltest.Case{Name: "Ext4InitBackendIsKeptAndRefusedWithoutPrjquota", Run: testExt4InitBackend, FS: kerneltest.TypeExt4},
		kerneltest.Case{Name: "Ext4UploadStreamPastTheLimitIs507", Run: testExt4UploadStream, FS: kerneltest.TypeExt4},
		kerneltest.Case{Name: "Ext4HealthReadsTheKernelsQuotaFlagsNow", Run: testExt4HealthQuota, FS: kerneltest.TypeExt4},
	)
}

// init --backend ext4 on ext4 with prjquota is kept in .xfsq/backend;
// limits above ext4's maximum are refused naming it; without prjquota the
// root refuses to run on the fallback (exit 1, the reason and the fix), and
// init --backend ext4 on such a root fails the same way.
func testExt4InitBackend(t *testing.T, fs *kerneltest.FS) {
	s := newSandbox(t, fs.Dir, "")
	out := s.ok("init", "--backend", "ext4")
	if !strings.Contains(out, "backend: ext4") || !strings.Contains(out, "CAP_SYS_RESOURCE") {
		t.Errorf("init --backend ext4 on ext4 with prjquota:\n%s\nwant backend ext4 and the CAP_SYS_RESOURCE note", out)
	}
	if b, err := os.ReadFile(filepath.Join(fs.Dir, ".xfsq", "backend")); err != nil || strings.TrimSpace(string(b)) != "ext4" {
		t.Errorf(".xfsq/backend holds %q (%v), want ext4", b, err)
	}
	if r := s.run("project", "add", "huge", "--bytes-hard", "9223372036854775807"); r.code != 2 || !strings.Contains(r.stderr, "ext4's maximum") {
		t.Errorf("a limit above ext4's maximum: exit %d %q, want 2 naming ext4's maximum", r.code, r.stderr)
	}
	if r := s.run("init", "--backend", "xfs"); r.code != 1 || !strings.Contains(r.stderr, "is on ext4") {
		t.Errorf("init --backend xfs on ext4: exit %d %q, want 1 saying the root is on ext4", r.code, r.stderr)
	}
	s.ok("init", "--backend", "ext4")
	fs.Remount("")
	defer fs.Remount("prjquota")
	for _, args := range [][]string{{"report"}, {"init", "--backend", "ext4"}} {
		r := s.run(args...)
		if r.code != 1 || !strings.Contains(r.stderr, "ext4 backend") || !strings.Contains(r.stderr, "-o prjquota") || !strings.Contains(r.stderr, "--backend fallback") {
			t.Errorf("xfsq %v on ext4 mounted without prjquota: exit %d %q; want 1 with the reason and the fix", args, r.code, r.stderr)
		}
	}
}

// An upload of unknown length through `xfsq serve` into a tree with room
// for less than the body: admission cannot know, the kernel stops the
// write — on ext4 only because xfsq's writing thread dropped
// CAP_SYS_RESOURCE (xfsq runs as root here) — and the client gets 507.
func testExt4UploadStream(t *testing.T, fs *kerneltest.FS) {
	loopbackUp(t)
	s := xfsSandbox(t, fs)
	sv := s.serve(t, operatorTokens(t))
	c := sv.client(e2eToken)
	ctx := context.Background()
	hard := uint64(10 * mib)
	if _, err := c.AddProject(ctx, "omni", client.AreaLimits{Workspace: client.Limits{}.WithBytesHard(hard)}); err != nil {
		t.Fatal(err)
	}
	body := io.MultiReader(bytes.NewReader(bytes.Repeat([]byte("u"), 20*mib)))
	_, err := c.Upload(ctx, "omni", "", "big", body, -1)
	var pe *client.ProblemError
	if !errors.As(err, &pe) || pe.Status != 507 {
		t.Errorf("a 20 MiB stream into a 10 MiB tree on ext4: %v, want 507", err)
	}
	if _, err := os.Stat(filepath.Join(s.root, "projects/omni/big")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused upload left projects/omni/big: %v", err)
	}
	id := quota.ProjectID(s.report()["omni/workspace"].ProjectID)
	if q := kernelQuotas(t, s.root)[id]; q.Bytes > hard {
		t.Errorf("the tree holds %d bytes past its %d limit", q.Bytes, hard)
	}
}

// The space no project owns, on XFS and ext4, from the one enumeration:
// what df says is used less what xfsq's trees hold, and of it what project
// 0 and an ID set by hand hold; report prints it, the overview carries it.
func testUnowned(t *testing.T, fs *kerneltest.FS) {
	s := xfsSandbox(t, fs)
	s.ok("project", "add", "omni", "--bytes-hard", "100m")
	if _, err := kerneltest.Fill(filepath.Join(s.root, "projects/omni/f"), 4*mib); err != nil {
		t.Fatal(err)
	}
	if _, err := kerneltest.Fill(filepath.Join(s.root, "outside"), 3*mib); err != nil { // project 0
		t.Fatal(err)
	}
	byHand := filepath.Join(s.root, "by-hand")
	os.Mkdir(byHand, 0o755)
	x, err := xfs.Open(s.root)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Assign(byHand, 42); err != nil {
		t.Fatal(err)
	}
	x.Close()
	if _, err := kerneltest.Fill(filepath.Join(byHand, "f"), 2*mib); err != nil {
		t.Fatal(err)
	}
	unix.Sync()
	st := s.store()
	m, err := sandbox.Open(t.Context(), sandbox.Options{Root: s.root, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	u, ok, err := m.Unowned(t.Context())
	if err != nil || !ok {
		t.Fatalf("Unowned: %v (known %v)", err, ok)
	}
	var projects uint64
	ours := map[quota.ProjectID]bool{}
	for _, r := range s.report() {
		ours[quota.ProjectID(r.ProjectID)] = true
	}
	oracle := kerneltest.ReportBlocks(t, s.root)
	var others uint64
	for id, row := range oracle {
		if ours[id] {
			projects += row[0]
		} else {
			others += row[0] // project 0 and 42
		}
	}
	var df unix.Statfs_t
	unix.Statfs(s.root, &df)
	used := (df.Blocks - df.Bfree) * uint64(df.Bsize)
	if u.ProjectsBytes != projects || u.OtherIDsBytes != others || u.UsedBytes != used || u.UnownedBytes != used-projects {
		t.Errorf("Unowned %+v; want projects %d and other IDs %d (the quota tools' report), used %d (statfs), unowned %d",
			u, projects, others, used, used-projects)
	}
	if others < 5*mib {
		t.Errorf("project 0 and ID 42 hold %d bytes by the quota tools, want the 5 MiB written there", others)
	}
	if out := s.ok("report"); !strings.Contains(out, "unowned: ") || !strings.Contains(out, "in no project") {
		t.Errorf("report does not show the unowned space:\n%s", out)
	}
}

// health's quota part on ext4: the ext4 backend, enforced, accounting and
// enforcement on; mounted without prjquota, a warning naming the mount
// option, as on XFS mounted with pqnoenforce.
func testExt4HealthQuota(t *testing.T, fs *kerneltest.FS) {
	s := xfsSandbox(t, fs)
	read := func() (q struct {
		Status, Fix string
		Backend     struct {
			Kind     string
			Enforced bool
		}
		Accounting, Enforcement *bool
	}) {
		t.Helper()
		r := s.run("health", "--json") // exit 1: the test kernel has no Docker daemon
		var full map[string]json.RawMessage
		if err := json.Unmarshal([]byte(r.stdout), &full); err != nil {
			t.Fatalf("health --json: %v\n%s%s", err, r.stdout, r.stderr)
		}
		if err := json.Unmarshal(full["quota"], &q); err != nil {
			t.Fatal(err)
		}
		return q
	}
	q := read()
	if q.Status != "ok" || q.Backend.Kind != "ext4" || !q.Backend.Enforced || q.Accounting == nil || !*q.Accounting || q.Enforcement == nil || !*q.Enforcement {
		t.Errorf("ext4 with prjquota: %+v", q)
	}
	fs.Remount("")
	defer fs.Remount("prjquota")
	q = read()
	if q.Status != "warn" || q.Backend.Kind != "fallback" || q.Backend.Enforced || q.Enforcement == nil || *q.Enforcement || !strings.Contains(q.Fix, "-o prjquota") {
		t.Errorf("ext4 without prjquota: %+v, want a warning naming -o prjquota", q)
	}
}
