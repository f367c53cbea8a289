package metrics_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/kerneltest"
	"github.com/xfsq/xfsq/metrics"
	"github.com/xfsq/xfsq/sandbox"
)

// BenchmarkKernelScrape1000 is BenchmarkScrape1000Fallback's scrape on a
// root on real XFS with project quotas: 1,000 projects (3,000 trees, each
// with its own project ID), one whole GET /metrics in process (on XFS the
// recorded trees and one enumeration of the kernel's counters), beside
// Manager.Usage alone — and beside the same sub-benchmarks of the fallback
// root of BenchmarkScrape1000Fallback in the same process, so that the
// XFS/fallback ratio comes from one boot. It needs the kernel: run it with
// scripts/metrics-bench.sh (docs/benchmarks.md, "Metrics scrape"); elsewhere it
// skips.
func BenchmarkKernelScrape1000(b *testing.B) {
	kfs := kerneltest.ForBenchmark(b)
	ctx := context.Background()
	// The store on the guest's tmpfs, as the fallback root's is: the
	// scrape reads it from the page cache wherever it is, and the set-up
	// does not wait on thousands of emulated disk flushes. The trees and
	// their project IDs are on the XFS mount.
	r := xfsRoot(b, kfs, filepath.Join(b.TempDir(), "xfsq.db"))
	// The two roots' set-ups at once: each store takes one writer at a
	// time, but two stores do not wait on each other.
	var wg sync.WaitGroup
	var xfsErr, fbErr error
	var fb *sandbox.Root
	start := time.Now()
	wg.Go(func() { xfsErr = addProjects(ctx, r.Manager, benchProjects(), progress("xfs")) })
	wg.Go(func() { fb, fbErr = bigRoot() })
	wg.Wait()
	if err := errors.Join(xfsErr, fbErr); err != nil {
		b.Fatal(err)
	}
	b.Logf("set-up: 1,000 projects on XFS and 1,000 on the fallback added in %.1f s", time.Since(start).Seconds())
	b.Run("xfs", func(b *testing.B) { scrapeBenchmarks(b, r) })
	b.Run("fallback", func(b *testing.B) { scrapeBenchmarks(b, fb) })
	// The two scrapes alternated, pair by pair, in alternating order: the
	// host's load drifts between sub-benchmarks run a minute apart, and
	// under emulation by more than the two may differ. Median ratios of
	// adjacent pairs, of wall time and of the process's CPU time.
	b.Run("paired", func(b *testing.B) {
		xh, fh := metrics.Handler(r, nil, nil), metrics.Handler(fb, nil, nil)
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		var wall, cpu []float64
		for i := 0; b.Loop(); i++ {
			var xw, xc, fw, fc time.Duration
			timed := func(h http.Handler, w, c *time.Duration) {
				c0, w0 := cpuTime(), time.Now()
				scrapeOnce(b, h, req)
				*w, *c = time.Since(w0), cpuTime()-c0
			}
			if i%2 == 0 {
				timed(xh, &xw, &xc)
				timed(fh, &fw, &fc)
			} else {
				timed(fh, &fw, &fc)
				timed(xh, &xw, &xc)
			}
			wall = append(wall, float64(xw)/float64(fw))
			if fc > 0 {
				cpu = append(cpu, float64(xc)/float64(fc))
			}
		}
		b.ReportMetric(median(wall), "xfs/fallback")
		if len(cpu) > 0 {
			b.ReportMetric(median(cpu), "xfs/fallback-cpu")
		}
	})
}

func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}
