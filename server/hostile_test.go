package server_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
)

// TestHostileRequests sends what a tenant or a hostile page would send to
// the routes of the last session (fleet, settings, doctor, report, diff,
// the project list) and to the file routes, as each kind of caller: an
// encoded slash or dot-dot in a path parameter, absurd or malformed query
// parameters, a limited reader asking about a project it may not know.
// None may answer 5xx (the contract checker wraps the server too), none
// may give a limited reader anything of "omni", and nothing outside a
// project may change: a canary file and directory beside the root, and
// the other project's file.
func TestHostileRequests(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(10<<20, "omni", "other")
		ts := newServer(t, r)
		canary := newCanary(t, r.Manager.Root)
		secret := filepath.Join(r.Manager.Root, "projects/omni/secret.txt")
		if err := os.WriteFile(secret, []byte("OMNI-SECRET"), 0o600); err != nil {
			t.Fatal(err)
		}
		const p = "/v1/workspace/storage/projects"
		long := strings.Repeat("a", 5000)
		many := strings.Repeat("project=x&", 5000)
		type req struct{ method, path, body string }
		reqs := []req{
			// Path parameters that encode a way elsewhere.
			{"GET", p + "/other%2F..%2Fomni", ""},
			{"GET", p + "/other%2F..%2Fomni/diff", ""},
			// (p + "/other%2F..%2Fomni/files/secret.txt" is answered 404 or
			// 400, but the contract checker's router cannot place it.)
			{"GET", p + "/other/files/..%2Fomni%2Fsecret.txt", ""},
			{"GET", p + "/other/files/%2E%2E%2F%2E%2E%2Fprojects%2Fomni%2Fsecret.txt", ""},
			{"GET", p + "/other/files/%2Fetc%2Fpasswd", ""},
			{"GET", p + "/other/files/a%00b", ""},
			{"PUT", p + "/other/files/..%2Fomni%2Fsecret.txt", "pwned"},
			{"PUT", p + "/other/files/%2E%2E%2F%2E%2E%2Fcanary-file", "pwned"},
			{"PUT", p + "/other/files/" + long, "x"},
			{"DELETE", p + "/other/files/..%2Fomni%2Fsecret.txt", ""},
			{"DELETE", p + "/other/files/..%2F..%2Fcanary-dir", ""},
			{"DELETE", p + "/other%2F..%2Fomni", ""},
			{"PATCH", p + "/other%2F..%2Fomni", `{"bytes_hard": "1m"}`},
			{"POST", p + "/other%2F..%2Fomni/sweep", `{"dry_run": true}`},
			{"GET", p + "/other/files/?area=..%2F..%2Fprojects", ""},
			{"GET", p + "/other/files/?area=inbound", ""},
			{"GET", p + "/other/files/?area=cache&area=workspace", ""},
			{"GET", p + "/_root/files/?area=inbound", ""},
			{"PUT", p + "/other/files/x?area=" + long, "x"},
			{"DELETE", p + "/other/files/uploads?recursive=true&area=..", ""},
			{"GET", p + "/" + long, ""},
			{"GET", p + "/OMNI", ""},
			{"GET", p + "/omni%20", ""},
			{"GET", p + "/%6Fmni", ""}, // "omni" with an encoded o
			// Settings: keys that are paths, bytes, or long.
			{"GET", "/v1/settings/..%2F..%2Fetc%2Fpasswd", ""},
			{"GET", "/v1/settings/%00", ""},
			{"GET", "/v1/settings/" + long, ""},
			{"PUT", "/v1/settings/scratch_ttl", `{"value": "` + long + `"}`},
			{"PUT", "/v1/settings/scratch_ttl", `{"value": "-1d"}`},
			{"PUT", "/v1/settings/scratch_ttl", `{"value": "213504d"}`},
			{"PUT", "/v1/settings/scratch_ttl", `{"value": 12}`},
			{"PUT", "/v1/settings/scratch_ttl", `{"value": "1d", "value": "0s"}`},
			{"DELETE", "/v1/settings/%2E%2E", ""},
			// Report: filters past sense.
			{"GET", "/v1/workspace/storage/report?over=NaN", ""},
			{"GET", "/v1/workspace/storage/report?over=1e999", ""},
			{"GET", "/v1/workspace/storage/report?over=-0", ""},
			{"GET", "/v1/workspace/storage/report?over=0x10", ""},
			{"GET", "/v1/workspace/storage/report?sort=" + long, ""},
			{"GET", "/v1/workspace/storage/report?" + many, ""},
			{"GET", "/v1/workspace/storage/report?project=omni", ""},
			{"GET", "/v1/workspace/storage/report?project=%3Cscript%3E", ""},
			{"GET", "/v1/workspace/storage/report?area=..&check=maybe", ""},
			{"GET", "/v1/workspace/storage/report?refresh=1&refresh=0", ""},
			// Diff: durations and counts past sense.
			{"GET", p + "/other/diff?since=9999999999999999999d", ""},
			{"GET", p + "/other/diff?since=213504d", ""},
			{"GET", p + "/other/diff?since=-1h", ""},
			{"GET", p + "/other/diff?top=99999999999999999999", ""},
			{"GET", p + "/other/diff?top=-1", ""},
			{"GET", p + "/other/diff?area=" + long, ""},
			// Events and the project list.
			{"GET", "/v1/workspace/storage/events?since=9999999999999999999d", ""},
			{"GET", "/v1/workspace/storage/events?since=0001-01-01T00:00:00Z", ""},
			{"GET", "/v1/workspace/storage/events?since=9999-12-31T23:59:59Z", ""},
			{"GET", "/v1/workspace/storage/events?cursor=" + long, ""},
			{"GET", "/v1/workspace/storage/events?cursor=-1", ""},
			{"GET", "/v1/workspace/storage/events?limit=99999999999999999999", ""},
			{"GET", "/v1/workspace/storage/events?project=omni", ""},
			{"GET", "/v1/workspace/storage/events?all_hosts=true", ""},
			{"GET", "/v1/workspace/storage/events?host=" + long, ""},
			{"GET", p + "?after=" + long + "&limit=0", ""},
			{"GET", p + "?limit=-1", ""},
			{"POST", p, `{"project": "<img src=x onerror=alert(1)>"}`},
			{"POST", p, `{"project": "../escape"}`},
			{"POST", p, `{"project": "a/b"}`},
			{"POST", p, `{"project": "` + long + `"}`},
			// Fleet: hosts that are paths, queries past sense.
			{"GET", "/v1/fleet/storage?" + strings.Repeat("host="+long[:200]+"&", 200), ""},
			{"GET", "/v1/fleet/storage?host=..%2F..%2F", ""},
			{"POST", "/v1/fleet/hosts/..%2F..%2Fx/retire", ""},
			{"POST", "/v1/fleet/hosts/" + long + "/retire", `{"force": true}`},
			{"POST", "/v1/fleet/hosts/%00/retire", `{"force": true}`},
			// Doctor as anyone: the operator's only.
			{"GET", "/v1/system/doctor?fix=true", ""},
		}
		for _, who := range []string{"limited", "reader", "operator"} {
			token := map[string]string{"reader": readerToken, "limited": limitedToken, "operator": operatorToken}[who]
			for _, q := range reqs {
				status, _, body := ts.raw(t, q.method, q.path, token, q.body)
				name := fmt.Sprintf("%s %s as %s", q.method, shorten(q.path), who)
				if status >= 500 {
					t.Errorf("%s: %d %s", name, status, shorten(body))
				}
				if who == "limited" && status < 300 && strings.Contains(body, "omni") {
					t.Errorf("%s: %d gives a reader limited to other something of omni: %s", name, status, shorten(body))
				}
				if who != "operator" && q.method != "GET" && status < 300 {
					t.Errorf("%s: %d; a reader changed something", name, status)
				}
				if strings.Contains(body, "OMNI-SECRET") && who == "limited" {
					t.Errorf("%s: a limited reader read omni's file", name)
				}
				canary.check(t, name)
				if b, err := os.ReadFile(secret); err != nil || string(b) != "OMNI-SECRET" {
					t.Fatalf("%s: omni's file is now %q (%v)", name, b, err)
				}
			}
		}
		// A limited reader naming a project it may not see is told what a
		// reader naming a project that does not exist is told.
		seen, _, a := ts.raw(t, "GET", "/v1/workspace/storage/report?project=omni", limitedToken, "")
		none, _, b := ts.raw(t, "GET", "/v1/workspace/storage/report?project=nosuch", limitedToken, "")
		if seen != none || strings.ReplaceAll(a, "omni", "nosuch") != b {
			t.Errorf("a limited reader tells omni from a project that does not exist: %d %s / %d %s", seen, a, none, b)
		}
	})
}

// TestOperationsWithoutABodyRefuseOne: the operations that take their
// options as query parameters (a project's removal, a file's, a lease's
// release, a setting's reset, doctor's repair) refuse a request body
// rather than ignore it. A script that sends {"dry_run": true} to DELETE
// a project, as POST .../sweep takes it, must not have the project
// removed for real; one that sends {"recursive": false} must not lose a
// directory; doctor's repair asked with a body that looks like a filter
// must not repair everything.
func TestOperationsWithoutABodyRefuseOne(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(10<<20, "omni", "victim")
		ts := newServer(t, r)
		const p = "/v1/workspace/storage/projects"
		dir := filepath.Join(r.Manager.Root, "projects/omni/keep")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "f"), []byte("keep me"), 0o644)
		if code, _, body := ts.raw(t, "POST", p+"/omni/leases/run-1", operatorToken, `{"ttl": "1h"}`); code != 200 {
			t.Fatalf("lease: %d %s", code, body)
		}
		if code, _, body := ts.raw(t, "PUT", "/v1/settings/scratch_ttl", operatorToken, `{"value": "2d"}`); code != 200 {
			t.Fatalf("set: %d %s", code, body)
		}
		cases := []struct {
			method, path, body string
			intact             func() bool
		}{
			{"DELETE", p + "/victim", `{"dry_run": true}`, func() bool {
				code, _, _ := ts.raw(t, "GET", p+"/victim", operatorToken, "")
				return code == 200
			}},
			{"DELETE", p + "/omni/files/keep?recursive=true", `{"dry_run": true}`, func() bool {
				_, err := os.Stat(filepath.Join(dir, "f"))
				return err == nil
			}},
			{"DELETE", p + "/omni/leases/run-1", `{"dry_run": true}`, func() bool {
				_, _, body := ts.raw(t, "GET", p+"/omni/leases", operatorToken, "")
				return strings.Contains(body, "run-1")
			}},
			{"DELETE", "/v1/settings/scratch_ttl", `{"dry_run": true}`, func() bool {
				_, _, body := ts.raw(t, "GET", "/v1/settings/scratch_ttl", operatorToken, "")
				return strings.Contains(body, `"2d"`)
			}},
			{"POST", "/v1/system/doctor/fix", `{"dry_run": true}`, func() bool { return true }},
		}
		for _, c := range cases {
			code, _, body := ts.raw(t, c.method, c.path, operatorToken, c.body)
			if !c.intact() {
				t.Errorf("%s %s with the body %s did what the body asked not to: %d %s", c.method, c.path, c.body, code, shorten(body))
			}
			if code != 400 || !strings.Contains(body, "body") {
				t.Errorf("%s %s with the body %s: %d %s; want 400 saying it takes no body", c.method, c.path, c.body, code, shorten(body))
			}
		}
	})
}

func shorten(s string) string {
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}

// canary is a file and a directory beside the sandbox root, whose content,
// modification time and link count an attack must leave as they are.
type canary struct {
	file, dir string
	before    map[string]os.FileInfo
}

func newCanary(t *testing.T, root string) *canary {
	t.Helper()
	parent := filepath.Dir(root)
	c := &canary{file: filepath.Join(parent, "canary-file"), dir: filepath.Join(parent, "canary-dir"), before: map[string]os.FileInfo{}}
	if err := os.WriteFile(c.file, []byte("CANARY"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(c.dir, "inner"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.dir, "inner/f"), []byte("CANARY-INNER"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{c.file, c.dir, filepath.Join(c.dir, "inner"), filepath.Join(c.dir, "inner/f")} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		c.before[p] = fi
	}
	return c
}

func (c *canary) check(t *testing.T, after string) {
	t.Helper()
	for p, was := range c.before {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatalf("after %s: canary %s: %v", after, p, err)
		}
		if fi.ModTime() != was.ModTime() || fi.Size() != was.Size() || fi.Mode() != was.Mode() ||
			nlink(fi) != nlink(was) {
			t.Fatalf("after %s: canary %s changed", after, p)
		}
	}
	if b, _ := os.ReadFile(c.file); string(b) != "CANARY" {
		t.Fatalf("after %s: canary file holds %q", after, b)
	}
	if b, _ := os.ReadFile(filepath.Join(c.dir, "inner/f")); string(b) != "CANARY-INNER" {
		t.Fatalf("after %s: canary dir's file holds %q", after, b)
	}
}

func nlink(fi os.FileInfo) uint64 { return uint64(fi.Sys().(*syscall.Stat_t).Nlink) } // uint32 on arm64

// TestHostileHeaders: a download asked with ranges and validators past
// sense, compression asked of a range, and the reader routes asked by a
// reader limited to another project, whose answers may name nothing of
// omni. None answers 5xx or outside the contract.
func TestHostileHeaders(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(10<<20, "omni", "other")
		ts := newServer(t, r)
		const f = "/v1/workspace/storage/projects/other/files/doc.txt"
		if code, _, body := ts.raw(t, "PUT", f, operatorToken, strings.Repeat("0123456789", 1000)); code != 201 {
			t.Fatalf("put: %d %s", code, body)
		}
		headers := []map[string]string{
			{"Range": "bytes=0-0,1-1,2-2,3-3,4-4,5-5,6-6,7-7,8-8,9-9,10-10,11-11,12-12,13-13,14-14,15-15"},
			{"Range": "bytes=-0"},
			{"Range": "bytes=99999999999999999999-"},
			{"Range": "bytes=5-1"},
			{"Range": "bytes=" + strings.Repeat("0-,", 2000) + "0-"},
			{"Range": "bytes=0-", "Accept-Encoding": "gzip"},
			{"If-None-Match": strings.Repeat(`"x",`, 3000) + `*`},
			{"If-Modified-Since": "Mon, 01 Jan 0001 00:00:00 GMT"},
			{"If-Range": `"nope"`, "Range": "bytes=0-10"},
			{"Accept-Encoding": strings.Repeat("gzip;q=0.5,", 2000)},
		}
		for _, h := range headers {
			req, _ := http.NewRequest("GET", ts.URL+f, nil)
			req.Header.Set("Authorization", "Bearer "+limitedToken)
			for k, v := range h {
				req.Header.Set(k, v)
			}
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				t.Errorf("GET with %.120v: %d", h, resp.StatusCode)
			}
		}
		for _, path := range []string{"/v1/system/health", "/v1/workspace/storage", "/v1/workspace/storage/projects",
			"/v1/workspace/storage/report", "/v1/workspace/storage/events?limit=500", "/v1/settings"} {
			code, _, body := ts.raw(t, "GET", path, limitedToken, "")
			if code != 200 || strings.Contains(body, "omni") {
				t.Errorf("GET %s as a reader limited to other: %d, names omni: %v", path, code, strings.Contains(body, "omni"))
			}
		}
	})
}
