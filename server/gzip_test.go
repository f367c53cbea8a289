package server_test

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
)

// getEncoded sends a GET with the Accept-Encoding given, undecoded (Go's
// transport would otherwise ask for gzip itself and hide the answer's).
func getEncoded(t *testing.T, ts *testServer, path, acceptEncoding string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", ts.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+operatorToken)
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	tr := ts.Client().Transport.(*http.Transport).Clone()
	tr.DisableCompression = true
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// A big answer honours Accept-Encoding: gzip, and decompresses to what the
// plain answer holds; a small one, a refusal and a client that did not ask
// get it plain. Every answer keeps its request id.
func TestAnswersHonourGzip(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		for i := range 20 {
			r.Add(10<<20, "project-"+strings.Repeat("x", i))
		}
		ts := newServer(t, r)
		const report = "/v1/workspace/storage/report"
		resp, zipped := getEncoded(t, ts, report, "br;q=1, gzip;q=0.8")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("X-Request-Id") == "" ||
			!strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
			t.Fatalf("report with gzip accepted: %d %v", resp.StatusCode, resp.Header)
		}
		zr, err := gzip.NewReader(strings.NewReader(string(zipped)))
		if err != nil {
			t.Fatal(err)
		}
		unzipped, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		_, plain := getEncoded(t, ts, report, "")
		var a, b map[string]any
		if json.Unmarshal(unzipped, &a) != nil || json.Unmarshal(plain, &b) != nil || len(a["trees"].([]any)) != len(b["trees"].([]any)) ||
			len(zipped) >= len(plain)/2 {
			t.Errorf("gzip answer of %d bytes decompresses to %d, plain %d: not the same report", len(zipped), len(unzipped), len(plain))
		}
		for _, c := range []struct{ path, accept string }{
			{report, ""}, {report, "gzip;q=0"}, {report, "identity"},
			{"/healthz", "gzip"},                            // tiny
			{"/v1/workspace/storage/projects/nope", "gzip"}, // a problem
		} {
			resp, body := getEncoded(t, ts, c.path, c.accept)
			if resp.Header.Get("Content-Encoding") != "" || resp.Header.Get("X-Request-Id") == "" || !json.Valid(body) {
				t.Errorf("GET %s with Accept-Encoding %q: %v %.100s, want it plain", c.path, c.accept, resp.Header, body)
			}
			// The answer a gzip client would get gzipped says so in Vary to a
			// client that gets it plain too, or a shared cache would keep
			// one body for both.
			if c.path == report && !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
				t.Errorf("GET %s with Accept-Encoding %q: Vary %q, want Accept-Encoding named", c.path, c.accept, resp.Header.Values("Vary"))
			}
		}
	})
}
