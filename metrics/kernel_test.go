package metrics_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/testsupport/kerneltest"
	"github.com/xfsq/xfsq/metrics"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/sandbox"
)

// TestKernel runs the scrape against real XFS project quotas (one boot of
// the test kernel for the package; see internal/testsupport/kerneltest).
func TestKernel(t *testing.T) {
	scrape := kerneltest.Case{Name: "ScrapedTreeUsageIsTheKernelsFigure", Run: testXFSScrape}
	kerneltest.Run(t, []kerneltest.Case{scrape, kerneltest.OnExt4(scrape)})
}

// xfsRoot initialises a root on a real XFS mount with project quotas, its
// store at dsn ("" is the root's own); it is closed before the harness
// unmounts (an open store or quota handle would fail the unmount).
func xfsRoot(tb testing.TB, kfs *kerneltest.FS, dsn string) *sandbox.Root {
	tb.Helper()
	r, err := sandbox.OpenRoot(context.Background(), sandbox.Config{Root: kfs.Dir, DSN: dsn, Host: "kernel", ProjectFiles: []string{}, Init: true, Backend: kfs.Type})
	if err != nil {
		tb.Fatalf("init an XFS root: %v", err)
	}
	tb.Cleanup(func() { r.Close() })
	return r
}

// On XFS a scrape's xfsq_tree_used_bytes and xfsq_tree_limit_bytes of
// every tree are the kernel's figures for the tree's project ID, as
// xfs_quota (a reader that is not xfsq) reports them: trees with data of
// different sizes, so that a series given another tree's figure, a
// recorded or stale figure, or none, is caught.
func testXFSScrape(t *testing.T, kfs *kerneltest.FS) {
	r := xfsRoot(t, kfs, "")
	ctx := context.Background()
	size := func(n uint64) *uint64 { return &n }
	adds := []struct {
		name string
		opts sandbox.AddOptions
	}{
		{"omni", sandbox.AddOptions{Workspace: sandbox.LimitChange{BytesSoft: size(8 * mib), BytesHard: size(10 * mib)}}},
		{"other", sandbox.AddOptions{Workspace: sandbox.LimitChange{BytesHard: size(100 * mib)}}},
		{"idle", sandbox.AddOptions{}},
	}
	for _, a := range adds {
		if _, err := r.Manager.Add(ctx, a.name, a.opts); err != nil {
			t.Fatalf("add %s: %v", a.name, err)
		}
	}
	for path, n := range map[string]int{"projects/omni/f": 3 * mib, "projects/other/f": 7 * mib, "cache/omni/f": mib} {
		if _, err := kerneltest.Fill(filepath.Join(kfs.Dir, path), n); err != nil {
			t.Fatalf("write %s: %v", path, err)
		}
	}
	trees, err := r.Manager.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Every project's trees and the root's inbound tree.
	if len(trees) != len(adds)*len(area.OfProject)+1 {
		t.Fatalf("%d trees, want %d", len(trees), len(adds)*len(area.OfProject)+1)
	}
	h := metrics.Handler(r, nil, nil)
	// The kernel may still change a count in the background (inodegc,
	// trimming preallocation past a file's end); the two readers must
	// agree once it settles.
	var diff string
	var samples []sample
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var st syscall.Statfs_t
		syscall.Statfs(kfs.Dir, &st) // pushes inodegc
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if w.Code != http.StatusOK {
			t.Fatalf("scrape: status %d: %s", w.Code, w.Body)
		}
		samples = parse(t, w.Body.String())
		if diff = scrapeDiff(t, samples, trees, kfs.Dir); diff == "" || time.Now().After(deadline) {
			break
		}
	}
	if diff != "" {
		t.Errorf("the scrape differs from xfs_quota report -p -b -n:\n%s", diff)
	}
	// The trees with data show it: the comparison above is not of zeros.
	if got := one(t, samples, metrics.TreeUsedBytes, tree("omni", area.Workspace)); got < 3*mib {
		t.Errorf("omni's workspace: %v bytes used in the scrape, want the 3 MiB written", got)
	}
	if got := one(t, samples, metrics.TreeUsedBytes, tree("other", area.Workspace)); got < 7*mib {
		t.Errorf("other's workspace: %v bytes used in the scrape, want the 7 MiB written", got)
	}
	if n := len(find(samples, metrics.TreeUsedBytes, nil)); n != len(trees) {
		t.Errorf("%d %s series, want one per tree (%d)", n, metrics.TreeUsedBytes, len(trees))
	}
}

// scrapeDiff compares each tree's used bytes and byte limits in the scrape
// with xfs_quota's row for the tree's project ID; "" when they agree.
func scrapeDiff(t *testing.T, samples []sample, trees []sandbox.TreeStatus, mnt string) string {
	t.Helper()
	kernel := kerneltest.ReportBlocks(t, mnt)
	var diff []string
	for _, tr := range trees {
		k, ok := kernel[quota.ProjectID(tr.ProjectID)]
		if !ok {
			diff = append(diff, fmt.Sprintf("%s/%s: project ID %d not in xfs_quota's report", tr.Project, tr.Area, tr.ProjectID))
			continue
		}
		l := tree(tr.Project, tr.Area)
		got := [3]uint64{uint64(one(t, samples, metrics.TreeUsedBytes, l)),
			uint64(one(t, samples, metrics.TreeLimitBytes, map[string]string{"project": tr.Project, "area": tr.Area, "kind": "soft"})),
			uint64(one(t, samples, metrics.TreeLimitBytes, map[string]string{"project": tr.Project, "area": tr.Area, "kind": "hard"}))}
		if got != k {
			diff = append(diff, fmt.Sprintf("%s/%s (ID %d): scrape used/soft/hard %v, xfs_quota %v", tr.Project, tr.Area, tr.ProjectID, got, k))
		}
	}
	slices.Sort(diff)
	return strings.Join(diff, "\n")
}

const mib = 1 << 20
