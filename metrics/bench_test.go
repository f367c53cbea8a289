package metrics_test

import (
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
	"github.com/xfsq/xfsq/store"
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
	r, err := project.OpenRoot(ctx, project.Config{Root: dir, Host: "bench", ProjectFiles: []string{}, Init: true})
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	next := make(chan int)
	for range 4 {
		wg.Go(func() {
			for i := range next {
				if _, err := r.Manager.Add(ctx, "p"+strconv.Itoa(i), project.AddOptions{}); err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
				}
			}
		})
	}
	for i := range benchProjects() {
		next <- i
	}
	close(next)
	wg.Wait()
	return r, first
})

var bigRootDir string

// benchProjects is 1,000, or XFSQ_BENCH_PROJECTS for a quicker profile.
func benchProjects() int {
	if v, err := strconv.Atoi(os.Getenv("XFSQ_BENCH_PROJECTS")); err == nil && v > 0 {
		return v
	}
	return 1000
}

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
	ctx := context.Background()
	scrape := func(b *testing.B, h http.Handler) {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		defer cpuPerOp(b)()
		for b.Loop() {
			w := &discardWriter{}
			h.ServeHTTP(w, req)
			if w.code != http.StatusOK || w.n == 0 {
				b.Fatalf("status %d, %d bytes", w.code, w.n)
			}
		}
	}
	b.Run("scrape", func(b *testing.B) { scrape(b, metrics.Handler(r, nil, nil)) })
	// As Prometheus asks: gzip (at its fastest level) on top.
	b.Run("scrape-gzip", func(b *testing.B) {
		h := metrics.Handler(r, nil, nil)
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		defer cpuPerOp(b)()
		for b.Loop() {
			w := &discardWriter{}
			h.ServeHTTP(w, req)
			if w.code != http.StatusOK || w.h.Get("Content-Encoding") != "gzip" {
				b.Fatalf("status %d, %v", w.code, w.h)
			}
		}
	})
	// Between scrapes, a commit: to one project (a write admitted, a walk
	// recorded), which the next scrape reads again alone; or to the
	// settings, which makes it read every tree. The commit is outside the
	// timer but inside cpu-ms/op (one small transaction, well under 1 ms).
	changing := func(b *testing.B, h http.Handler, change func(i int)) {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		defer cpuPerOp(b)()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			change(i)
			b.StartTimer()
			w := &discardWriter{}
			h.ServeHTTP(w, req)
			if w.code != http.StatusOK || w.n == 0 {
				b.Fatalf("status %d, %d bytes", w.code, w.n)
			}
		}
	}
	b.Run("scrape-after-a-write", func(b *testing.B) {
		h := metrics.Handler(r, nil, nil)
		changing(b, h, func(i int) {
			k := store.TreeKey{Project: "p" + strconv.Itoa(i%1000), Area: project.AreaWorkspace}
			if err := r.Manager.Store.AddLedger(ctx, k, 4096, 1, "bench", time.Now()); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("scrape-after-a-settings-change", func(b *testing.B) {
		h := metrics.Handler(r, nil, nil)
		changing(b, h, func(i int) {
			if _, _, err := r.Manager.SetSetting(ctx, "soft_grace", strconv.Itoa(1+i%2)+"h"); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("scrape+health", func(b *testing.B) {
		checker, err := health.New(health.Options{Root: r.Manager.Root, CPUSampleInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		scrape(b, metrics.Handler(r, checker, nil))
	})
	b.Run("usage", func(b *testing.B) {
		defer cpuPerOp(b)()
		for b.Loop() {
			if ts, err := r.Manager.Usage(ctx); err != nil || len(ts) != benchProjects()*len(project.Areas)+1 {
				b.Fatalf("%d trees, %v", len(ts), err)
			}
		}
	})
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
