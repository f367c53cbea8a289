package server

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/sandbox"
)

// TestStoredOverviewNeverReachesALimitedReader: the overview and the
// summary are kept encoded and gzipped for an unlimited reader; a reader
// limited to one project, asking through the whole server (auth, gzip
// middleware) after the full reader warmed both, in every Accept-Encoding
// (gzip, identity, gzip;q=0, *, none, HEAD), with the full reader's ETag
// in If-None-Match, before and after the library restamps the overview,
// never gets another project's name or file name, gets 200 with its own
// tag where the full reader's tag is sent, and every answer says it is
// private and varies by Authorization. A project removed, or a limit
// changed, shows at the next request, restamp or not.
func TestStoredOverviewNeverReachesALimitedReader(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(10<<20, "alpha", "secretbeta")
		for i := range 40 { // bodies past gzipMin for both callers' answers
			r.Add(10<<20, fmt.Sprintf("hidden%02d", i))
		}
		for i := range 30 { // alpha's own answer past gzipMin too
			os.WriteFile(filepath.Join(r.Manager.Root, "projects/alpha", fmt.Sprintf("alphafile-%02d-%s", i, strings.Repeat("a", 60))), make([]byte, 4096*(i+1)), 0o644)
		}
		os.WriteFile(filepath.Join(r.Manager.Root, "projects/secretbeta/SECRETFILE"), make([]byte, 3<<20), 0o644)
		if _, err := r.Manager.Snapshot(r.Ctx, sandbox.SnapshotOptions{}); err != nil {
			t.Fatal(err)
		}
		const fullTok, mineTok = "full-reader-token-0123456789", "alpha-reader-token-0123456789"
		s, err := New(Config{Root: r.Root, Tokens: tokens{
			fullTok: {Name: "dash", Role: RoleReader},
			mineTok: {Name: "alpha-ci", Role: RoleReader, Projects: []string{"alpha"}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s.Handler())
		t.Cleanup(hs.Close)
		get := func(tok, method, route string, header ...string) (*http.Response, string) {
			t.Helper()
			resp, body := do(t, method, hs.URL+route, nil, append([]string{"Authorization", "Bearer " + tok}, header...)...)
			if resp.Header.Get("Content-Encoding") == "gzip" {
				zr, err := gzip.NewReader(strings.NewReader(body))
				if err != nil {
					t.Fatalf("%s %s: gzip: %v", method, route, err)
				}
				b, err := io.ReadAll(zr)
				if err != nil {
					t.Fatalf("%s %s: gunzip: %v", method, route, err)
				}
				body = string(b)
			}
			return resp, body
		}
		routes := []string{"/v1/workspace/storage", "/v1/workspace/storage/summary"}
		encodings := []string{"gzip", "identity", "gzip;q=0", "*", "", "gzip, deflate, br", "x-gzip"}
		round := func(when string) {
			t.Helper()
			for _, route := range routes {
				// The full reader first: what is kept is its answer.
				full, fullBody := get(fullTok, http.MethodGet, route, "Accept-Encoding", "gzip")
				if full.StatusCode != 200 || !strings.Contains(fullBody, `"secretbeta"`) {
					t.Fatalf("%s: full reader %s: %d, secretbeta in it %v", when, route, full.StatusCode, strings.Contains(fullBody, "secretbeta"))
				}
				fullTag := full.Header.Get("ETag")
				for _, enc := range encodings {
					for _, method := range []string{http.MethodGet, http.MethodHead} {
						for _, inm := range []string{"", fullTag, "W/" + strings.TrimPrefix(fullTag, "W/") + `, "other"`} {
							resp, body := get(mineTok, method, route, "Accept-Encoding", enc, "If-None-Match", inm)
							what := fmt.Sprintf("%s: limited %s %s (Accept-Encoding %q, If-None-Match %q)", when, method, route, enc, inm)
							if resp.StatusCode != 200 {
								t.Errorf("%s: %d, want 200 (its own answer differs from the full reader's)", what, resp.StatusCode)
							}
							for _, leak := range []string{"secretbeta", "hidden", "SECRETFILE"} {
								if strings.Contains(body, leak) {
									t.Errorf("%s: the answer names %s", what, leak)
								}
							}
							if method == http.MethodGet && !strings.Contains(body, `"alpha"`) {
								t.Errorf("%s: its own project missing: %.200s", what, body)
							}
							if tag := resp.Header.Get("ETag"); tag == fullTag || tag == "" {
								t.Errorf("%s: ETag %q, the full reader's is %q", what, tag, fullTag)
							}
							if !strings.Contains(resp.Header.Get("Cache-Control"), "private") || !slices.Contains(resp.Header.Values("Vary"), "Authorization") {
								t.Errorf("%s: Cache-Control %q Vary %q, want private and Authorization", what, resp.Header.Get("Cache-Control"), resp.Header.Values("Vary"))
							}
							if (enc == "gzip;q=0" || enc == "identity" || enc == "" || enc == "x-gzip") && resp.Header.Get("Content-Encoding") != "" {
								t.Errorf("%s: Content-Encoding %q to a caller that does not take gzip", what, resp.Header.Get("Content-Encoding"))
							}
						}
					}
				}
				// The full reader's answer after the limited reader's:
				// nothing of the limited view was kept in its place.
				if _, after := get(fullTok, http.MethodGet, route, "Accept-Encoding", "gzip"); after != fullBody {
					t.Errorf("%s: the full reader's %s changed after a limited reader's requests", when, route)
				}
			}
		}
		round("assembled")

		// Past MaxAge with nothing changed: the library restamps around
		// the same projects (the server splices their kept encoding).
		restamp := func() {
			t.Helper()
			before, err := r.Manager.Overview(r.Ctx, sandbox.OverviewOptions{MaxAge: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second) // generated_at is to the second
			r.Manager.Overview(r.Ctx, sandbox.OverviewOptions{MaxAge: time.Nanosecond})
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if after, _ := r.Manager.Overview(r.Ctx, sandbox.OverviewOptions{MaxAge: time.Hour}); after != before {
					return
				}
				if time.Now().After(deadline) {
					t.Fatal("no overview made past MaxAge")
				}
			}
		}
		restamp()
		round("restamped")

		// A limit changed and a project removed show at once, and a
		// restamp after does not splice them back.
		if _, err := r.Manager.Set(r.Ctx, "alpha", area.Workspace, sandbox.LimitChange{BytesHard: fixture.Size(77 << 20)}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Manager.Remove(r.Ctx, "hidden07", sandbox.RemoveOptions{}); err != nil {
			t.Fatal(err)
		}
		changed := func(when string) {
			t.Helper()
			_, full := get(fullTok, http.MethodGet, "/v1/workspace/storage", "Accept-Encoding", "gzip")
			_, mine := get(mineTok, http.MethodGet, "/v1/workspace/storage", "Accept-Encoding", "gzip")
			limit := fmt.Sprintf(`"quota_bytes":%d`, 77<<20)
			if strings.Contains(full, `"hidden07"`) || !strings.Contains(full, limit) || !strings.Contains(mine, limit) {
				t.Errorf("%s: removed project still listed %v, new limit in full/limited answers %v/%v",
					when, strings.Contains(full, `"hidden07"`), strings.Contains(full, limit), strings.Contains(mine, limit))
			}
			if bytes.Contains([]byte(mine), []byte("hidden")) {
				t.Errorf("%s: the limited answer names another project", when)
			}
		}
		changed("after the change")
		restamp()
		changed("after the change, restamped")
	})
}

// TestLimitedReadersDiskFiguresAreItsOwn: the overview's and the
// summary's disk carry what the projects' limits promise and what the
// sweep policies would free; for a reader limited to some projects they
// are of those projects' trees (as the report's are of the trees it
// answers), never the sum over every tree, which with two projects on a
// host gave away the other's limits and reclaimable bytes.
func TestLimitedReadersDiskFiguresAreItsOwn(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(10<<20, "alpha")
		r.Add(37<<20, "secretbeta")
		dist := filepath.Join(r.Manager.Root, "projects/secretbeta/dist")
		os.MkdirAll(dist, 0o755)
		os.WriteFile(filepath.Join(dist, "old.js"), make([]byte, 80<<10), 0o644)
		old := time.Now().Add(-30 * 24 * time.Hour)
		os.Chtimes(filepath.Join(dist, "old.js"), old, old)
		os.Chtimes(dist, old, old)
		if _, err := r.Manager.Snapshot(r.Ctx, sandbox.SnapshotOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Manager.Sweep(r.Ctx, sandbox.SweepOptions{Projects: []string{"secretbeta"}, DryRun: true}); err != nil {
			t.Fatal(err)
		}
		rows, err := r.Manager.Report(r.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		var alphaPromised uint64
		alphaUnlimited := 0
		for _, row := range rows {
			if row.Project == "alpha" {
				if row.BytesHard == 0 {
					alphaUnlimited++
				}
				alphaPromised += row.BytesHard
			}
		}
		a, err := newStorageAPI(r.Root)
		if err != nil {
			t.Fatal(err)
		}
		rs := routes{overviewPattern: answered(nil, a.Overview), "GET /v1/workspace/storage/summary": answered(nil, a.Summary)}
		all := storageTestServer(t, Caller{Name: "dash", Role: RoleReader}, rs)
		limited := storageTestServer(t, Caller{Name: "alpha-ci", Role: RoleReader, Projects: []string{"alpha"}}, rs)
		disk := func(srv, route string) sandbox.OverviewDisk {
			t.Helper()
			resp, body := do(t, http.MethodGet, srv+route, nil)
			var v struct{ Disk sandbox.OverviewDisk }
			if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &v) != nil {
				t.Fatalf("%s: %d %s", route, resp.StatusCode, body)
			}
			return v.Disk
		}
		for _, route := range []string{"/v1/workspace/storage", "/v1/workspace/storage/summary"} {
			full := disk(all.URL, route)
			if full.PromisedBytes < alphaPromised+37<<20 || full.ReclaimableBytes == 0 {
				t.Fatalf("%s: the full reader's disk %+v: want both projects' promise and secretbeta's reclaimable bytes (the test would not tell)", route, full)
			}
			mine := disk(limited.URL, route)
			if mine.PromisedBytes != alphaPromised || mine.UnlimitedTrees != alphaUnlimited || mine.ReclaimableBytes != 0 {
				t.Errorf("%s: the limited reader's disk promises %d over %d unlimited trees, %d reclaimable; want alpha's own: %d, %d, 0",
					route, mine.PromisedBytes, mine.UnlimitedTrees, mine.ReclaimableBytes, alphaPromised, alphaUnlimited)
			}
			if mine.TotalBytes > 0 && mine.OvercommitRatio != float64(alphaPromised)/float64(mine.TotalBytes) {
				t.Errorf("%s: the limited reader's overcommit ratio %v, want alpha's promise over the disk", route, mine.OvercommitRatio)
			}
		}
	})
}

// TestAcceptsGzipReadsQualities: gzip is sent only to a request whose
// Accept-Encoding accepts it (RFC 9110 §12.5.3): a q of zero in any of its
// forms refuses it, an explicit gzip entry decides over "*", and a q that
// is not a number is no acceptance (the plain body is always safe).
func TestAcceptsGzipReadsQualities(t *testing.T) {
	for header, want := range map[string]bool{
		"gzip": true, "GZIP": true, "br;q=1, gzip;q=0.8": true, "*": true, "gzip;q=0.001": true, "gzip; q=1.0": true,
		"": false, "identity": false, "br": false, "gzip;q=0": false, "gzip;Q=0": false, "gzip; q=0.000": false,
		"gzip;q=0.": false, "gzip;level=1;q=0": false, "gzip;q=0, *": false, "*;q=0": false, "*;q=0, gzip": true,
		"gzip;q=zero": false, "identity, *;q=0": false,
	} {
		if got := acceptsGzip(header); got != want {
			t.Errorf("Accept-Encoding %q: gzip accepted %v, want %v", header, got, want)
		}
	}
}
