package metrics_test

import (
	"cmp"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xfsq/xfsq/health"
	"github.com/xfsq/xfsq/metrics"
	"github.com/xfsq/xfsq/project"
)

// bigRoot is a fallback root (SQLite store) of 1,000 projects, made once
// per test binary: adding them takes minutes, the benchmarks milliseconds.
var bigRoot = sync.OnceValues(func() (*project.Root, error) {
	dir, err := os.MkdirTemp("", "xfsq-metrics-bench-")
	if err != nil {
		return nil, err
	}
	bigRootDir = dir
	ctx := context.Background()
	r, err := project.OpenRoot(ctx, project.Config{Root: dir, Host: "bench", ProjectFiles: []string{}, Init: true, Backend: project.BackendFallback})
	if err != nil {
		return nil, err
	}
	return r, addProjects(ctx, r.Manager, 1000)
})

// addProjects adds projects p0…p(n-1) with default limits, four at a time:
// an add waits on its commits' syncs (and on XFS on its quotactls), which
// overlap with the other adds' directory work. The first error is returned.
func addProjects(ctx context.Context, m *project.Manager, n int) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	next := make(chan int)
	for range 4 {
		wg.Go(func() {
			for i := range next {
				if _, err := m.Add(ctx, "p"+strconv.Itoa(i), project.AddOptions{}); err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

var bigRootDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if bigRootDir != "" {
		if r, err := bigRoot(); err == nil {
			r.Close()
		}
		os.RemoveAll(bigRootDir)
	}
	os.Exit(code)
}

// BenchmarkScrape1000Fallback: one whole GET /metrics of a fallback root
// of 1,000 projects (2,000 trees), served in process (no network): the
// trees' usage, the journal since the last scrape, the Go and process
// collectors, and the encoding. Goal: ≤ 10 ms median. Beside it, in the
// same run: the library read alone (Usage), the health answer's share
// (real /proc and statfs, no Docker), and Report, which a scrape built on
// it would cost.
func BenchmarkScrape1000Fallback(b *testing.B) {
	r, err := bigRoot()
	if err != nil {
		b.Fatal(err)
	}
	scrapeBenchmarks(b, r)
}

// scrapeBenchmarks are the sub-benchmarks of a scrape of r, whichever its
// backend: the scrape, the scrape with a health checker, and Usage alone.
func scrapeBenchmarks(b *testing.B, r *project.Root) {
	ctx := context.Background()
	b.Run("scrape", func(b *testing.B) { scrapeLoop(b, metrics.Handler(r, nil, nil)) })
	b.Run("scrape+health", func(b *testing.B) {
		checker, err := health.New(health.Options{Root: r.Manager.Root, CPUSampleInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		scrapeLoop(b, metrics.Handler(r, checker, nil))
	})
	b.Run("usage", func(b *testing.B) {
		defer cpuPerOp(b)()
		for b.Loop() {
			if ts, err := r.Manager.Usage(ctx); err != nil || len(ts) != 1000*len(project.Areas) {
				b.Fatalf("%d trees, %v", len(ts), err)
			}
		}
	})
}

// scrapeLoop times whole GET /metrics requests of h, in process.
func scrapeLoop(b *testing.B, h http.Handler) {
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	defer cpuPerOp(b)()
	for b.Loop() {
		scrapeOnce(b, h, req)
	}
}

func scrapeOnce(b *testing.B, h http.Handler, req *http.Request) {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		b.Fatalf("status %d: %s", w.Code, w.Body)
	}
}

// cpuPerOp reports the CPU time the process spent per op (user + system,
// every thread: the GC's included) from the call to the returned func.
func cpuPerOp(b *testing.B) func() {
	before := cpuTime()
	return func() {
		b.ReportMetric(float64((cpuTime()-before).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
