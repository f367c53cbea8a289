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

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/health"
	"github.com/xfsq/xfsq/metrics"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// bigRoot is a fallback root (SQLite store) of 1,000 projects, made once
// per test binary: adding them takes minutes, the benchmarks milliseconds.
// $XFSQ_BENCH_FALLBACK_ROOT names where it is kept instead of a temporary
// directory: made there when it holds no root yet, opened as it is when it
// does, and left for the next run. scripts/metrics-bench.sh makes it on
// the host and copies it into the test kernel's memory, where adding 1,000
// fallback projects under emulation takes the best part of an hour.
var bigRoot = sync.OnceValues(func() (*sandbox.Root, error) {
	ctx := context.Background()
	cfg := sandbox.Config{Root: os.Getenv(envFallbackRoot), Host: "bench", ProjectFiles: []string{}, Init: true, Backend: sandbox.BackendFallback}
	if cfg.Root == "" {
		dir, err := os.MkdirTemp("", "xfsq-metrics-bench-")
		if err != nil {
			return nil, err
		}
		bigRootDir, cfg.Root = dir, dir
	} else if _, err := os.Stat(sandbox.LocalDSN(cfg.Root)); err == nil {
		cfg.Init, cfg.Backend = false, "" // init chose the backend
	}
	r, err := sandbox.OpenRoot(ctx, cfg)
	if err != nil {
		return nil, err
	}
	bigRootOpen = r
	if !cfg.Init {
		return r, nil
	}
	return r, addProjects(ctx, r.Manager, benchProjects(), progress("fallback"))
})

// benchProjects is 1,000, or XFSQ_BENCH_PROJECTS for a quicker profile.
func benchProjects() int {
	if v, err := strconv.Atoi(os.Getenv("XFSQ_BENCH_PROJECTS")); err == nil && v > 0 {
		return v
	}
	return 1000
}

const envFallbackRoot = "XFSQ_BENCH_FALLBACK_ROOT"

// addProjects adds projects p0…p(n-1) with default limits, one after
// the other, calling progress (if not nil) after each hundred. Not
// concurrently: the store takes one writer at a time, and waiting writers
// back off in sleeps, so four at a time took 1.4–3× as long as one
// (200 adds on this machine, on its disk and on tmpfs).
func addProjects(ctx context.Context, m *sandbox.Manager, n int, progress func(done int)) error {
	for i := range n {
		if _, err := m.Add(ctx, "p"+strconv.Itoa(i), sandbox.AddOptions{}); err != nil {
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
	bigRootOpen *sandbox.Root
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
// of 1,000 projects (3,000 trees and the inbound tree), served in process (no network): the
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
	ctx := context.Background()
	// As Prometheus asks: gzip (at its fastest level) on top.
	b.Run("scrape-gzip", func(b *testing.B) {
		h := metrics.Handler(r, nil, nil)
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		defer cpuPerOp(b)()
		for b.Loop() {
			w := scrapeOnce(b, h, req)
			if w.h.Get("Content-Encoding") != "gzip" {
				b.Fatalf("not gzipped: %v", w.h)
			}
		}
	})
	// Between scrapes, a commit: to one project (a write admitted, a walk
	// recorded), which the next scrape reads again alone; or to the
	// settings, which makes it read every tree. The commit is outside the
	// timer but inside cpu-ms/op (one small transaction, well under 1 ms).
	changing := func(b *testing.B, change func(i int)) {
		h := metrics.Handler(r, nil, nil)
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		defer cpuPerOp(b)()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			change(i)
			b.StartTimer()
			scrapeOnce(b, h, req)
		}
	}
	b.Run("scrape-after-a-write", func(b *testing.B) {
		changing(b, func(i int) {
			k := store.TreeKey{Project: "p" + strconv.Itoa(i%benchProjects()), Area: area.Workspace}
			if err := sandbox.TestStore(r.Manager).AddLedger(ctx, k, 4096, 1, "bench", time.Now()); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("scrape-after-a-settings-change", func(b *testing.B) {
		changing(b, func(i int) {
			if _, _, err := r.Manager.SetSetting(ctx, "soft_grace", strconv.Itoa(1+i%2)+"h"); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// scrapeBenchmarks are the sub-benchmarks of a scrape of r, whichever its
// backend: the scrape, the scrape with a health checker, and Usage alone.
func scrapeBenchmarks(b *testing.B, r *sandbox.Root) {
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
			// Every project's trees and the root's inbound tree.
			if ts, err := r.Manager.Usage(ctx); err != nil || len(ts) != benchProjects()*len(area.OfProject)+1 {
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

func scrapeOnce(b *testing.B, h http.Handler, req *http.Request) *discardWriter {
	w := &discardWriter{}
	h.ServeHTTP(w, req)
	if w.code != http.StatusOK || w.n == 0 {
		b.Fatalf("status %d, %d bytes", w.code, w.n)
	}
	return w
}

// discardWriter is a ResponseWriter that counts the body and keeps none
// of it: a real connection streams the body out through a small buffer,
// and httptest's recorder growing a copy of megabytes would be measured
// instead of the handler.
type discardWriter struct {
	h    http.Header
	code int
	n    int
}

func (w *discardWriter) Header() http.Header {
	if w.h == nil {
		w.h = http.Header{}
	}
	return w.h
}

func (w *discardWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.n += len(p)
	return len(p), nil
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
