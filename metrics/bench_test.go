package metrics_test

import (
	"context"
	"fmt"
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
// $XFSQ_BENCH_FALLBACK_ROOT names where it is kept instead of a temporary
// directory: made there when it holds no root yet, opened as it is when it
// does, and left for the next run. scripts/metrics-bench.sh makes it on
// the host and copies it into the test kernel's memory, where adding 1,000
// fallback projects under emulation takes the best part of an hour.
var bigRoot = sync.OnceValues(func() (*project.Root, error) {
	ctx := context.Background()
	cfg := project.Config{Root: os.Getenv(envFallbackRoot), Host: "bench", ProjectFiles: []string{}, Init: true, Backend: project.BackendFallback}
	if cfg.Root == "" {
		dir, err := os.MkdirTemp("", "xfsq-metrics-bench-")
		if err != nil {
			return nil, err
		}
		bigRootDir, cfg.Root = dir, dir
	} else if _, err := os.Stat(project.LocalDSN(cfg.Root)); err == nil {
		cfg.Init, cfg.Backend = false, "" // init chose the backend
	}
	r, err := project.OpenRoot(ctx, cfg)
	if err != nil {
		return nil, err
	}
	bigRootOpen = r
	if !cfg.Init {
		return r, nil
	}
	return r, addProjects(ctx, r.Manager, 1000, progress("fallback"))
})

const envFallbackRoot = "XFSQ_BENCH_FALLBACK_ROOT"

// addProjects adds projects p0…p(n-1) with default limits, one after
// the other, calling progress (if not nil) after each hundred. Not
// concurrently: the store takes one writer at a time, and waiting writers
// back off in sleeps, so four at a time took 1.4–3× as long as one
// (200 adds on this machine, on its disk and on tmpfs).
func addProjects(ctx context.Context, m *project.Manager, n int, progress func(done int)) error {
	for i := range n {
		if _, err := m.Add(ctx, "p"+strconv.Itoa(i), project.AddOptions{}); err != nil {
			return err
		}
		if progress != nil && (i+1)%100 == 0 {
			progress(i + 1)
		}
	}
	return nil
}

// progress prints how far a set-up of minutes has got, on stderr.
func progress(what string) func(int) {
	start := time.Now()
	return func(done int) {
		fmt.Fprintf(os.Stderr, "set-up: %s: %d projects added in %.1f s\n", what, done, time.Since(start).Seconds())
	}
}

// bigRootDir is bigRoot's temporary directory, bigRootOpen the root once
// opened: closed at the end (the store's last commits checkpointed into
// its file, for a copy of it to carry), and the temporary one removed.
var (
	bigRootDir  string
	bigRootOpen *project.Root
)

func TestMain(m *testing.M) {
	code := m.Run()
	if bigRootOpen != nil {
		bigRootOpen.Close()
	}
	if bigRootDir != "" {
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
