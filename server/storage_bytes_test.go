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

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/sandbox"
)

// TestOverviewServedFromStoredBytes: the overview is encoded and gzipped
// once per overview the library assembles, and every request is answered
// with those bytes (the same gzip, not gzip again); the gzip is the plain
// body, and the plain body is the overview as writeJSON encodes it — also
// once the library restamps it (the projects' encoding reused, spliced).
func TestOverviewServedFromStoredBytes(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		for i := range 40 {
			r.Add(10<<20, fmt.Sprintf("p%02d", i))
		}
		a, err := newStorageAPI(r.Root)
		if err != nil {
			t.Fatal(err)
		}
		srv := storageTestServer(t, Caller{Name: "dash", Role: RoleReader}, routes{overviewPattern: answered(nil, a.Overview)})
		url := srv.URL + "/v1/workspace/storage"
		get := func(enc string) (*http.Response, []byte) {
			resp, body := do(t, http.MethodGet, url, nil, "Accept-Encoding", enc)
			if resp.StatusCode != 200 {
				t.Fatalf("GET (%s): %d %s", enc, resp.StatusCode, body)
			}
			return resp, []byte(body)
		}
		check := func(when string) {
			t.Helper()
			ov, err := r.Manager.Overview(r.Ctx, sandbox.OverviewOptions{MaxAge: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			want, tag, _ := encodeTagged(ov)
			r1, z1 := get("gzip")
			a.mu.Lock()
			kept := a.overview.gzip
			a.mu.Unlock()
			r2, z2 := get("gzip")
			rp, plain := get("identity")
			if r1.Header.Get("Content-Encoding") != "gzip" || !bytes.Equal(z1, z2) || &kept[0] != &a.overview.gzip[0] {
				t.Errorf("%s: two gzipped answers differ or were gzipped again (%q)", when, r1.Header.Get("Content-Encoding"))
			}
			zr, err := gzip.NewReader(bytes.NewReader(z1))
			if err != nil {
				t.Fatal(err)
			}
			unzipped, err := io.ReadAll(zr)
			if err != nil || !bytes.Equal(unzipped, plain) || !bytes.Equal(plain, want) || len(plain) < gzipMin {
				t.Errorf("%s: gunzipped (%v) / plain / encoded overview differ:\n%.300s\n%.300s", when, err, plain, want)
			}
			for _, resp := range []*http.Response{r1, r2, rp} {
				if resp.Header.Get("ETag") != tag || resp.Header.Values("Vary")[len(resp.Header.Values("Vary"))-1] != "Accept-Encoding" {
					t.Errorf("%s: ETag %q Vary %q, want %q and Accept-Encoding", when, resp.Header.Get("ETag"), resp.Header.Values("Vary"), tag)
				}
			}
			if resp, _ := do(t, http.MethodGet, url, nil, "Accept-Encoding", "gzip", "If-None-Match", tag); resp.StatusCode != http.StatusNotModified {
				t.Errorf("%s: If-None-Match with the tag: %d, want 304", when, resp.StatusCode)
			}
		}
		check("assembled")
		before, err := r.Manager.Overview(r.Ctx, sandbox.OverviewOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Past MaxAge with nothing changed: restamped around the same projects.
		time.Sleep(time.Second) // generated_at is to the second
		r.Manager.Overview(r.Ctx, sandbox.OverviewOptions{MaxAge: time.Nanosecond})
		var after *sandbox.Overview
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if after, _ = r.Manager.Overview(r.Ctx, sandbox.OverviewOptions{MaxAge: time.Hour}); after != before {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no overview made past MaxAge")
			}
		}
		if !after.GeneratedAt.After(before.GeneratedAt) || &after.Projects[0] != &before.Projects[0] {
			t.Errorf("past MaxAge with no change: generated %s (was %s), projects shared %v; want restamped around the same projects",
				after.GeneratedAt, before.GeneratedAt, &after.Projects[0] == &before.Projects[0])
		}
		check("restamped")
	})
}

// TestOverviewSummaryEndpoint: the summary is the overview's disk, the
// number of projects and the fullest and top growers of those the caller
// may see, in the order the overview page draws them; a limited reader's
// counts and lists are over its projects only; ETag and 304 as the
// overview's.
func TestOverviewSummaryEndpoint(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		names := []string{"alpha", "beta", "gamma", "delta", "eps", "zeta", "omni"}
		r.Add(10<<20, names...)
		for i, n := range names {
			os.WriteFile(filepath.Join(r.Manager.Root, "projects", n, "data"), make([]byte, (i+1)<<20), 0o644)
		}
		if _, err := r.Manager.Snapshot(r.Ctx, sandbox.SnapshotOptions{}); err != nil {
			t.Fatal(err)
		}
		a, err := newStorageAPI(r.Root)
		if err != nil {
			t.Fatal(err)
		}
		rs := routes{"GET /v1/workspace/storage/summary": answered(nil, a.Summary)}
		all := storageTestServer(t, Caller{Name: "dash", Role: RoleReader}, rs)
		limited := storageTestServer(t, Caller{Name: "ci", Role: RoleReader, Projects: []string{"alpha", "beta"}}, rs)
		read := func(srv string) (sandbox.OverviewSummary, string) {
			resp, body := do(t, http.MethodGet, srv+"/v1/workspace/storage/summary", nil)
			var s sandbox.OverviewSummary
			if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &s) != nil {
				t.Fatalf("summary: %d %s", resp.StatusCode, body)
			}
			return s, resp.Header.Get("ETag")
		}
		fullest := func(s sandbox.OverviewSummary) (out []string) {
			for _, p := range s.Fullest {
				out = append(out, p.Project)
			}
			return out
		}
		s, tag := read(all.URL)
		if s.ProjectsTotal != 7 || fmt.Sprint(fullest(s)) != "[omni zeta eps delta gamma]" || s.Growers == nil || s.Disk.TotalBytes == 0 || s.Host == "" {
			t.Errorf("summary: %d projects, fullest %v, growers %v, disk %+v; want 7, omni zeta eps delta gamma, [], the disk", s.ProjectsTotal, fullest(s), s.Growers, s.Disk)
		}
		if resp, _ := do(t, http.MethodGet, all.URL+"/v1/workspace/storage/summary", nil, "If-None-Match", tag); resp.StatusCode != http.StatusNotModified {
			t.Errorf("If-None-Match with the tag: %d, want 304", resp.StatusCode)
		}
		if resp, body := do(t, http.MethodGet, all.URL+"/v1/workspace/storage/summary?refresh=maybe", nil); resp.StatusCode != 400 || !strings.Contains(body, "refresh") {
			t.Errorf("?refresh=maybe: %d %s, want 400 naming refresh", resp.StatusCode, body)
		}
		mine, mineTag := read(limited.URL)
		if mine.ProjectsTotal != 2 || fmt.Sprint(fullest(mine)) != "[beta alpha]" || mineTag == tag {
			t.Errorf("a reader of alpha and beta: %d projects, fullest %v (tag %s, the whole's %s)", mine.ProjectsTotal, fullest(mine), mineTag, tag)
		}
	})
}

// TestNotModifiedVariesAsTheAnswer: a 304 of a tagged answer names the
// Vary its 200 would (RFC 9110 §15.4.5) — Authorization, and
// Accept-Encoding whether the gzip is stored, made by the middleware or
// not made at all for this body or this client.
func TestNotModifiedVariesAsTheAnswer(t *testing.T) {
	big := append(append([]byte(`{"generated_at":"x","pad":"`), bytes.Repeat([]byte("a"), 2*gzipMin)...), "\"}\n"...)
	stored, err := gzipOf(big)
	if err != nil {
		t.Fatal(err)
	}
	small := []byte(`{"generated_at":"x","n":1}` + "\n")
	for name, answer := range map[string]taggedAnswer{
		"stored gzip":        {body: big, gzip: stored, etag: tagOf(big)},
		"gzipped on the way": {body: big, etag: tagOf(big)},
		"small":              {body: small, etag: tagOf(small)},
	} {
		serve := func(accept, inm string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodGet, "/v1/workspace/storage", nil)
			if accept != "" {
				req.Header.Set("Accept-Encoding", accept)
			}
			if inm != "" {
				req.Header.Set("If-None-Match", inm)
			}
			rec := httptest.NewRecorder()
			out, finish := gzipped(rec, req)
			writeTagged(out, req, answer)
			finish()
			return rec
		}
		for _, accept := range []string{"gzip", "identity", ""} {
			ok, notModified := serve(accept, ""), serve(accept, answer.etag)
			if ok.Code != http.StatusOK || notModified.Code != http.StatusNotModified {
				t.Fatalf("%s, Accept-Encoding %q: %d then %d, want 200 then 304", name, accept, ok.Code, notModified.Code)
			}
			if want, got := ok.Header().Values("Vary"), notModified.Header().Values("Vary"); !slices.Equal(got, want) || !slices.Contains(want, "Accept-Encoding") {
				t.Errorf("%s, Accept-Encoding %q: the 304 varies on %q, the 200 on %q; want the same, Accept-Encoding among them", name, accept, got, want)
			}
		}
	}
}
