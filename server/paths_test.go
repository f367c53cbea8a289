package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/server"
)

// A path ServeMux would clean or complete with a slash is answered as
// every unknown path is — a 404 problem with a request id, saying which
// path would do — never net/http's redirect with an HTML body.
func TestUncleanPathsAreProblems(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(10<<20, "omni")
		ts := newServer(t, r)
		const files = "/v1/workspace/storage/projects/omni/files"
		for path, target := range map[string]string{
			files + "/.":                    files,
			files + "//x":                   files + "/x",
			"/v1/workspace//storage":        "/v1/workspace/storage",
			files:                           files + "/",
			files + "/a/../b":               files + "/b",
			"/v1/workspace/storage/./":      "/v1/workspace/storage/",
			"/v1/workspace/storage/report/": "",
		} {
			for _, method := range []string{"GET", "PUT"} {
				code, h, body := ts.raw(t, method, path, operatorToken, "x")
				if code != http.StatusNotFound || h.Get("X-Request-Id") == "" || h.Get("Content-Type") != server.ProblemType ||
					h.Get("Location") != "" || !strings.Contains(body, target) {
					t.Errorf("%s %s: %d %v %s, want a 404 problem naming %s", method, path, code, h, body, target)
				}
			}
		}
		// The clean forms still answer.
		if code, _, body := ts.raw(t, "GET", files+"/", readerToken, ""); code != 200 {
			t.Errorf("the tree's top: %d %s", code, body)
		}
	})
}

// /metrics speaks OpenMetrics to a scraper that asks for it (Prometheus
// does), the text format to anyone else.
func TestMetricsNegotiatesOpenMetrics(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(10<<20, "omni")
		ts := newServer(t, r)
		req, _ := http.NewRequest("GET", ts.URL+"/metrics", nil)
		req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0;q=0.9,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		body := string(raw)
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/openmetrics-text; version=1.0.0") || !strings.HasSuffix(body, "\n# EOF\n") ||
			strings.Count(body, "# EOF") != 1 || !strings.Contains(body, `xfsq_tree_used_bytes{project="omni",area="workspace"}`) {
			t.Errorf("OpenMetrics asked: %s\n%.300s … %s", resp.Header.Get("Content-Type"), body, body[max(0, len(body)-200):])
		}
		// A counter's TYPE names the family, its samples end in _total.
		if !strings.Contains(body, "# TYPE go_gc_duration_seconds summary") || strings.Contains(body, "# TYPE process_cpu_seconds_total counter") ||
			!strings.Contains(body, "# TYPE process_cpu_seconds counter") {
			t.Errorf("counters not as OpenMetrics names them:\n%.2000s", body)
		}
		for _, accept := range []string{"", "*/*", "text/plain"} {
			req, _ := http.NewRequest("GET", ts.URL+"/metrics", nil)
			if accept != "" {
				req.Header.Set("Accept", accept)
			}
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			text, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") || strings.Contains(string(text), "# EOF") {
				t.Errorf("Accept %q: %s, want the text format", accept, resp.Header.Get("Content-Type"))
			}
		}
	})
}
