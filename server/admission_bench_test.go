package server_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/daemon"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/server"
)

// BenchmarkAdmissionHandler is one cached GET …/admission through the
// whole server in process — token check, route, access log (JSON, through
// a LogBuffer to /dev/null as serve's stderr would be), Manager.Check from the read
// cache, the JSON answer — without the network, beside the cheapest
// handler behind the same middleware (a fixed 200-byte body): where a
// request's time goes that wrk over loopback cannot show
// (scripts/serve-bench.sh measures that).
//
//	go test ./server -run '^$' -bench AdmissionHandler -benchmem -count 5
func BenchmarkAdmissionHandler(b *testing.B) {
	r := fixture.New(b, "sqlite", filepath.Join(b.TempDir(), "xfsq.db"))
	names := make([]string, 50)
	for i := range names {
		names[i] = "p" + strconv.Itoa(i)
	}
	r.Add(10<<30, names...)
	set, err := daemon.ParseTokens(strings.NewReader(tokenFile), "bench")
	if err != nil {
		b.Fatal(err)
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	// Buffered, as serve's stderr is (LogBuffer), and written as serve
	// writes it: slog for the server's own lines, by hand for the access log.
	logs := daemon.NewLogBuffer(devnull, 100*time.Millisecond)
	b.Cleanup(func() { logs.Close(); devnull.Close() })
	fixed := []byte(`{"status":"ok","project":"omni","decision":"ok","message":"ok (1.2 GiB of 50.0 GiB)","backend":"fallback","trees":[{"area":"workspace","used_bytes":1288490188,"bytes_hard":53687091200}],"pad":"xxxxxxxxxx"}` + "\n")
	s, err := server.New(server.Config{Root: r.Root, Tokens: set, Log: slog.New(slog.NewJSONHandler(logs, nil)), AccessLog: logs,
		Routes: []server.Route{{Method: "GET", Pattern: "/bench/fixed", Role: server.RoleReader, Handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(fixed)
		}}}})
	if err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	run := func(b *testing.B, path func(i int) string) {
		reqs := make([]*http.Request, len(names))
		for i := range reqs {
			reqs[i] = httptest.NewRequest("GET", path(i), nil)
			reqs[i].Host = "localhost" // httptest's example.com is refused (421) as a rebinding name
			reqs[i].Header.Set("Authorization", "Bearer "+readerToken)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, reqs[i%len(reqs)])
			if w.Code != http.StatusOK {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
			i++
		}
	}
	b.Run("fixed-behind-the-middleware", func(b *testing.B) { run(b, func(int) string { return "/bench/fixed" }) })
	b.Run("admission", func(b *testing.B) {
		run(b, func(i int) string { return "/v1/workspace/storage/projects/" + names[i] + "/admission" })
	})
}
