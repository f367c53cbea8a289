package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/sandbox"
)

// BenchmarkOverview1000 serves GET /v1/workspace/storage for a fallback
// root of 1,000 projects that have snapshots, over real HTTP with 32
// keep-alive connections, beside a minimal net/http handler returning a
// fixed 200-byte JSON (the ceiling of this machine) measured in the same
// run. It reports requests/s; see docs/benchmarks.md.
//
//	go test ./server -run '^$' -bench Overview1000 -benchtime 20000x -count 5 -timeout 60m
//
// XFSQ_BENCH_PROJECTS=N makes the root smaller (setting up 1,000 projects,
// each added and snapshotted through the library, takes minutes).
func BenchmarkOverview1000(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("XFSQ_BENCH_PROJECTS")); err == nil && v > 0 {
		n = v
	}
	setup := time.Now()
	r := fixture.New(b, "sqlite", filepath.Join(b.TempDir(), "xfsq.db"))
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("p%04d", i)
	}
	r.Add(10<<30, names...)
	for _, name := range names[:n/10] {
		os.WriteFile(filepath.Join(r.Manager.Root, "projects", name, "data"), make([]byte, 64<<10), 0o644)
	}
	if _, err := r.Manager.Snapshot(r.Ctx, sandbox.SnapshotOptions{}); err != nil {
		b.Fatal(err)
	}
	a, err := newStorageAPI(r.Root)
	if err != nil {
		b.Fatal(err)
	}
	reader := Caller{Name: "dash", Role: RoleReader}
	ov := storageTestServer(b, reader, routes{overviewPattern: answered(nil, a.Overview)})
	fixed := []byte(`{"status":"ok","project":"omni","decision":"ok","message":"ok (1.2 GiB of 50.0 GiB)","backend":"fallback","trees":[{"area":"workspace","used_bytes":1288490188,"bytes_hard":53687091200}],"pad":"xxxxxxxxxx"}` + "\n")
	ceiling := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(fixed)
	}))
	b.Cleanup(ceiling.Close)
	// Warm: the first request assembles and encodes the overview.
	resp, body := do(b, http.MethodGet, ov.URL+"/v1/workspace/storage", nil)
	if resp.StatusCode != 200 || strings.Count(body, `"project":`) != n {
		b.Fatalf("overview: %d, %d bytes", resp.StatusCode, len(body))
	}
	b.Logf("%d projects, set up in %s; overview body: %d bytes", n, time.Since(setup).Round(time.Second), len(body))
	etag := resp.Header.Get("ETag")
	for _, c := range []struct {
		name, url, inm string
		want           int
	}{
		{"ceiling", ceiling.URL, "", 200},
		{"cached", ov.URL + "/v1/workspace/storage", "", 200},
		{"not-modified", ov.URL + "/v1/workspace/storage", etag, 304},
	} {
		b.Run(c.name, func(b *testing.B) { loadHTTP(b, c.url, c.inm, c.want, 32) })
	}
}

// loadHTTP sends b.N GETs over conns keep-alive connections and reports
// requests/s, the 99th percentile latency and the bytes of an answer's
// body (body-B/op: a larger answer costs more to send, and
// scripts/regress-summary.py judges the overview per byte served too).
func loadHTTP(b *testing.B, url, inm string, want, conns int) {
	// No gzip: the answer as the server keeps it, not a client's inflating
	// of it in the same process (which the code before gzip never paid).
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var mu sync.Mutex
	var lat []time.Duration
	var changed atomic.Int64 // 200s where a 304 was hoped for
	var bodyBytes atomic.Int64
	next := make(chan struct{}, b.N)
	for range b.N {
		next <- struct{}{}
	}
	close(next)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, b.N/conns+1)
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			req.Header = http.Header{} // each connection's own, revalidated apart
			if inm != "" {
				req.Header.Set("If-None-Match", inm)
			}
			for range next {
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				bodyBytes.Add(n)
				switch {
				case resp.StatusCode == want:
				case want == http.StatusNotModified && resp.StatusCode == http.StatusOK:
					// A figure moved (the free space of a busy disk): revalidate against the new tag.
					req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
					changed.Add(1)
				default:
					b.Errorf("status %d, want %d", resp.StatusCode, want)
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if len(lat) == 0 {
		return
	}
	slicesSort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(bodyBytes.Load())/float64(len(lat)), "body-B/op")
	if want == http.StatusNotModified {
		b.ReportMetric(float64(changed.Load()), "changed")
	}
}

func slicesSort(d []time.Duration) { slices.Sort(d) }
