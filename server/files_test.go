package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apiv1 "github.com/xfsq/xfsq/api/v1"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/internal/testsupport/prereq"
	"github.com/xfsq/xfsq/internal/testsupport/tenanttest"
	"github.com/xfsq/xfsq/sandbox"
)

const filesPattern = "/v1/workspace/storage/projects/{id}/files/{path...}"

func filesRoutes(r *fixture.Root) routes {
	a := newFilesAPI(r.Root)
	return routes{
		"GET " + filesPattern:    answered(nil, a.Get),
		"PUT " + filesPattern:    answered(nil, a.Put),
		"POST " + filesPattern:   answered(nil, a.Put),
		"DELETE " + filesPattern: answered(nil, a.Delete),
	}
}

// filesURL is p's URL as openapi.json describes it: one segment, its
// slashes %2F.
func filesURL(srv string, project, p string) string {
	return srv + "/v1/workspace/storage/projects/" + project + "/files/" + strings.ReplaceAll(p, "/", "%2F")
}

func wantStatus(t *testing.T, what string, resp *http.Response, body string, status int) {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("%s: %d %s, want %d", what, resp.StatusCode, body, status)
	}
}

// TestFilesRoundTrip: upload (new 201, replace 200), download with its
// validators and ranges, list, delete (journalled under the token's name,
// a directory only when recursive).
func TestFilesRoundTrip(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<20, "omni")
		srv := storageTestServer(t, operator, filesRoutes(r))
		u := filesURL(srv.URL, "omni", "uploads/notes.txt")

		resp, body := put(t, u, "hello world")
		wantStatus(t, "upload a new file", resp, body, http.StatusCreated)
		var res struct {
			Path     string `json:"path"`
			Bytes    uint64 `json:"written_bytes"`
			Replaced bool   `json:"replaced"`
		}
		if json.Unmarshal([]byte(body), &res) != nil || res.Path != "projects/omni/uploads/notes.txt" || res.Bytes != 11 || res.Replaced {
			t.Errorf("upload answer: %s", body)
		}
		resp, body = do(t, http.MethodPost, u, strings.NewReader("hello, world"))
		wantStatus(t, "replace by POST", resp, body, http.StatusOK)

		resp, body = do(t, http.MethodGet, u, nil)
		wantStatus(t, "download", resp, body, http.StatusOK)
		h := resp.Header
		if body != "hello, world" || h.Get("ETag") == "" || h.Get("Last-Modified") == "" || h.Get("Content-Type") != "application/octet-stream" ||
			h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Content-Disposition") != `attachment; filename="notes.txt"; filename*=UTF-8''notes.txt` ||
			h.Get("Accept-Ranges") != "bytes" {
			t.Errorf("download: %q %v", body, h)
		}
		resp, _ = do(t, http.MethodGet, u, nil, "If-None-Match", h.Get("ETag"))
		wantStatus(t, "If-None-Match of the same file", resp, "", http.StatusNotModified)
		resp, body = do(t, http.MethodGet, u, nil, "Range", "bytes=7-11")
		if resp.StatusCode != http.StatusPartialContent || body != "world" || resp.Header.Get("Content-Range") != "bytes 7-11/12" {
			t.Errorf("range: %d %q %v", resp.StatusCode, body, resp.Header)
		}
		put(t, u, "hello, there")
		resp, _ = do(t, http.MethodGet, u, nil, "If-None-Match", h.Get("ETag"))
		wantStatus(t, "If-None-Match after the file was replaced", resp, "", http.StatusOK)

		resp, body = do(t, http.MethodGet, filesURL(srv.URL, "omni", "uploads"), nil)
		var l apiv1.Listing
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &l) != nil || l.Path != "uploads" || l.Area != "workspace" ||
			len(l.Entries) != 1 || l.Entries[0].Name != "notes.txt" || l.Entries[0].Type != "file" || l.Entries[0].SizeBytes != 12 {
			t.Errorf("listing: %d %s", resp.StatusCode, body)
		}
		resp, body = do(t, http.MethodGet, filesURL(srv.URL, "omni", ""), nil)
		if resp.StatusCode != 200 || !strings.Contains(body, `"name":"uploads"`) || !strings.Contains(body, `"name":"inbox"`) {
			t.Errorf("listing of the tree's top: %d %s", resp.StatusCode, body)
		}
		resp, body = do(t, http.MethodGet, filesURL(srv.URL, "omni", "nope"), nil)
		wantStatus(t, "a missing file", resp, body, http.StatusNotFound)

		resp, body = put(t, filesURL(srv.URL, "omni", "c.bin")+"?area=cache", "cached")
		wantStatus(t, "upload to the cache", resp, body, http.StatusCreated)
		if b, err := os.ReadFile(filepath.Join(r.Manager.Root, "cache/omni/c.bin")); err != nil || string(b) != "cached" {
			t.Errorf("?area=cache wrote elsewhere: %v %q", err, b)
		}
		resp, body = do(t, http.MethodGet, filesURL(srv.URL, "omni", "c.bin")+"?area=bogus", nil)
		wantStatus(t, "an unknown area", resp, body, http.StatusBadRequest)

		resp, body = do(t, http.MethodDelete, filesURL(srv.URL, "omni", "uploads"), nil)
		wantStatus(t, "delete a directory without ?recursive=1", resp, body, http.StatusBadRequest)
		if _, err := os.Stat(filepath.Join(r.Manager.Root, "projects/omni/uploads/notes.txt")); err != nil {
			t.Errorf("the refused delete removed something: %v", err)
		}
		resp, body = do(t, http.MethodDelete, filesURL(srv.URL, "omni", "uploads")+"?recursive=maybe", nil)
		if resp.StatusCode != 400 || !strings.Contains(body, "recursive") {
			t.Errorf("a bad ?recursive: %d %s", resp.StatusCode, body)
		}
		resp, body = do(t, http.MethodDelete, filesURL(srv.URL, "omni", "uploads")+"?recursive=1", nil)
		wantStatus(t, "delete a directory with ?recursive=1", resp, body, http.StatusOK)
		// uploads/ is the tree's skeleton: emptied, never removed.
		if !strings.Contains(body, `"state":"done"`) || !strings.Contains(body, `"removed_entries":1`) {
			t.Errorf("delete answer: %s", body)
		}
		if fi, err := os.Stat(filepath.Join(r.Manager.Root, "projects/omni/uploads")); err != nil || !fi.IsDir() {
			t.Errorf("the skeleton directory uploads/ went with its content: %v", err)
		}
		evicted := r.Events("storage.evicted")
		if len(evicted) == 0 || evicted[0].Actor != "ops-bot" || !strings.Contains(string(evicted[0].Payload), "projects/omni/uploads") {
			t.Errorf("the delete was not journalled under the token's name: %+v", evicted)
		}
	})
}

// TestFilesHostileTenant: what a tenant plants in its tree never lets a
// request read, write or hang outside it.
func TestFilesHostileTenant(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<20, "omni")
		srv := storageTestServer(t, operator, filesRoutes(r))
		tree := filepath.Join(r.Manager.Root, "projects/omni")
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(os.Symlink("/etc/passwd", filepath.Join(tree, "passwd")))
		must(os.Symlink("/etc", filepath.Join(tree, "etc")))
		must(os.Symlink("inbox", filepath.Join(tree, "inside")))
		must(syscall.Mkfifo(filepath.Join(tree, "fifo"), 0o644))
		must(os.WriteFile(filepath.Join(tree, "line\nbreak\".txt"), []byte("tricky"), 0o644))

		// A FIFO opened for reading blocks until a writer comes: bound the
		// whole test so that a regression fails rather than hangs.
		client := &http.Client{Timeout: 10 * time.Second}
		get := func(p string) (int, string) {
			resp, err := client.Get(filesURL(srv.URL, "omni", p))
			if err != nil {
				t.Fatalf("GET %s: %v", p, err)
			}
			defer resp.Body.Close()
			var b strings.Builder
			bufio.NewReader(resp.Body).WriteTo(&b)
			return resp.StatusCode, b.String()
		}
		for _, c := range []struct{ path, why string }{
			{"passwd", "a symlink to /etc/passwd"},
			{"etc/passwd", "a symlinked directory on the way"},
			{"inside", "a symlink that stays inside (never followed either)"},
			{"fifo", "a FIFO"},
			{"..%2f..%2f..%2fetc%2fpasswd", "percent-encoded slashes and .."},
			{"%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "percent-encoded .."},
			{"inbox/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "percent-encoded .. after a real directory"},
		} {
			code, body := get(c.path)
			if code < 400 || code >= 500 || strings.Contains(body, "root:") {
				t.Errorf("GET %s (%s): %d %s", c.path, c.why, code, body)
			}
		}
		// A raw "..": the mux cleans it away before any handler, and what is
		// left is no file of the tree.
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		must(err)
		fmt.Fprintf(conn, "GET /v1/workspace/storage/projects/omni/files/../../../../../../etc/passwd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		must(err)
		var raw strings.Builder
		bufio.NewReader(resp.Body).WriteTo(&raw)
		conn.Close()
		if resp.StatusCode == 200 || strings.Contains(raw.String(), "root:") {
			t.Errorf("a raw ..: %d %s", resp.StatusCode, raw.String())
		}

		// A name with a newline and a quote reads, and its header carries neither raw.
		resp2, err := client.Get(filesURL(srv.URL, "omni", "line%0Abreak%22.txt"))
		must(err)
		resp2.Body.Close()
		cd := resp2.Header.Get("Content-Disposition")
		if resp2.StatusCode != 200 || cd != `attachment; filename="line_break_.txt"; filename*=UTF-8''line_break%22.txt` {
			t.Errorf("a name with a newline: %d %q", resp2.StatusCode, cd)
		}
		// ... but no new name may have one.
		resp, body := put(t, filesURL(srv.URL, "omni", "new%0Aline"), "x")
		wantStatus(t, "upload to a name with a newline", resp, body, http.StatusBadRequest)
		// Writes through or over links, and onto a FIFO, are refused; the target is untouched.
		before, _ := os.ReadFile("/etc/passwd")
		for _, p := range []string{"passwd", "etc/passwd", "etc/xfsq-escape", "fifo", "%2e%2e/%2e%2e/escape"} {
			resp, body := put(t, filesURL(srv.URL, "omni", p), "owned")
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("PUT %s: %d %s", p, resp.StatusCode, body)
			}
		}
		if after, _ := os.ReadFile("/etc/passwd"); string(after) != string(before) {
			t.Fatal("/etc/passwd changed")
		}
		if _, err := os.Stat("/etc/xfsq-escape"); err == nil {
			os.Remove("/etc/xfsq-escape")
			t.Error("a write through a symlinked directory landed in /etc")
		}
		// Deleting through a link removes nothing outside.
		for _, p := range []string{"etc/passwd", "%2e%2e/%2e%2e/etc"} {
			resp, body := do(t, http.MethodDelete, filesURL(srv.URL, "omni", p)+"?recursive=1", nil)
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("DELETE %s: %d %s", p, resp.StatusCode, body)
			}
		}
		if _, err := os.Stat("/etc/passwd"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestUploadLimits: a declared length over the quota is refused with 507
// before the body is read, one over max_file_bytes with 413, known or
// chunked; the old file stays whole each time.
func TestUploadLimits(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(256<<10, "omni")
		srv := storageTestServer(t, operator, filesRoutes(r))
		u := filesURL(srv.URL, "omni", "f")
		put(t, u, "old")
		resp, body := put(t, u, strings.Repeat("x", 512<<10))
		if resp.StatusCode != http.StatusInsufficientStorage || !strings.Contains(body, "https://xfsq.dev/problems/denied") {
			t.Errorf("over the quota: %d %s", resp.StatusCode, body)
		}
		// chunked: the length is unknown until the body ends
		resp, body = do(t, http.MethodPut, u, struct{ *strings.Reader }{strings.NewReader(strings.Repeat("x", 512<<10))})
		wantStatus(t, "chunked over the quota", resp, body, http.StatusInsufficientStorage)
		if _, _, err := r.Manager.SetSetting(r.Ctx, "max_file_bytes", "1000"); err != nil {
			t.Fatal(err)
		}
		resp, body = put(t, u, strings.Repeat("x", 1001))
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body, "max_file_bytes") {
			t.Errorf("over max_file_bytes: %d %s", resp.StatusCode, body)
		}
		resp, body = do(t, http.MethodPut, u, struct{ *strings.Reader }{strings.NewReader(strings.Repeat("x", 1001))})
		wantStatus(t, "chunked over max_file_bytes", resp, body, http.StatusRequestEntityTooLarge)
		// Four refusals, known length and chunked, 507 and 413: the old
		// file is as it was.
		if resp, body = do(t, http.MethodGet, u, nil); body != "old" {
			t.Errorf("after the refused uploads: %d %q, want the old file intact", resp.StatusCode, body)
		}
		resp, body = do(t, http.MethodPut, u, struct{ *strings.Reader }{strings.NewReader(strings.Repeat("y", 1000))})
		wantStatus(t, "chunked at max_file_bytes", resp, body, http.StatusOK)
		resp, body = do(t, http.MethodGet, u, nil)
		if body != strings.Repeat("y", 1000) {
			t.Errorf("after the refusals: %d %q", resp.StatusCode, body)
		}
	})
}

// TestUploadClientGone: a client that disconnects mid-body leaves the old
// file as it was, no temporary file and no reservation.
func TestUploadClientGone(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(16<<20, "omni")
		srv := storageTestServer(t, operator, filesRoutes(r))
		put(t, filesURL(srv.URL, "omni", "f"), "old content")
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "PUT /v1/workspace/storage/projects/omni/files/f HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", 4<<20)
		conn.Write([]byte(strings.Repeat("n", 1<<20)))
		// The write is under way once it holds a reservation.
		waitFor(t, "the upload's reservation", func() bool {
			rs, err := sandbox.TestStore(r.Manager).Reservations(r.Ctx)
			return err == nil && len(rs) == 1
		})
		conn.Close()
		waitFor(t, "the reservation's release", func() bool {
			rs, err := sandbox.TestStore(r.Manager).Reservations(r.Ctx)
			return err == nil && len(rs) == 0
		})
		if b, err := os.ReadFile(filepath.Join(r.Manager.Root, "projects/omni/f")); err != nil || string(b) != "old content" {
			t.Errorf("the old file after an aborted upload: %v %q", err, b)
		}
		entries, _ := os.ReadDir(filepath.Join(r.Manager.Root, "projects/omni"))
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".xfsq-tmp") {
				t.Errorf("a temporary file was left: %s", e.Name())
			}
		}
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestConcurrentUploadsStayWithinLimit: 50 clients uploading into one
// project on the fallback backend at once never pass its hard limit
// together; those that do not fit get 507, and what they were refused is
// not on disk.
func TestConcurrentUploadsStayWithinLimit(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		if r.Manager.IsXFS() {
			prereq.Missing(t, "the fallback's admission is under test; the fixture root is on XFS: run the tests on another filesystem")
		}
		const hard, size, clients = 1 << 20, 64 << 10, 50
		r.Add(hard, "omni")
		srv := storageTestServer(t, operator, filesRoutes(r))
		var wg sync.WaitGroup
		codes := make([]int, clients)
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := strings.NewReader(strings.Repeat("z", size))
				var req *http.Request
				req, _ = http.NewRequestWithContext(context.Background(), http.MethodPut, filesURL(srv.URL, "omni", fmt.Sprintf("uploads/f%02d", i)), body)
				if i%2 == 1 {
					// chunked for half of them: a reservation that grows as the body streams
					req.ContentLength, req.Body = -1, io.NopCloser(struct{ *strings.Reader }{strings.NewReader(strings.Repeat("z", size))})
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				codes[i] = resp.StatusCode
			}()
		}
		wg.Wait()
		created, refused := 0, 0
		for i, c := range codes {
			switch c {
			case http.StatusCreated:
				created++
			case http.StatusInsufficientStorage:
				refused++
				if _, err := os.Stat(filepath.Join(r.Manager.Root, "projects/omni/uploads", fmt.Sprintf("f%02d", i))); err == nil {
					t.Errorf("f%02d was refused yet is on disk", i)
				}
			default:
				t.Errorf("upload %d: status %d", i, c)
			}
		}
		// What is really on disk, walked now, against the limit.
		p, err := r.Manager.Show(r.Ctx, "omni", sandbox.Read{Refresh: true})
		if err != nil {
			t.Fatal(err)
		}
		var used uint64
		for _, tr := range p.Trees {
			if tr.Area == area.Workspace {
				used = tr.UsedBytes
			}
		}
		if used > hard || created == 0 || refused == 0 {
			t.Errorf("%d created, %d refused, %d bytes on disk of %d", created, refused, used, hard)
		}
		t.Logf("%d created, %d refused, %d bytes on disk of a %d limit", created, refused, used, hard)
	})
}

// TestFilesListingIsPaged: a tenant's directory of many names is answered
// in pages (at most the default without ?limit=, next_cursor saying where
// the next begins), each page sorted and the pages together every name
// once, names that are not UTF-8 included; a limit past the maximum and a
// made-up cursor are refused.
func TestFilesListingIsPaged(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<20, "omni")
		srv := storageTestServer(t, Caller{Name: "dash", Role: RoleReader}, filesRoutes(r))
		dir := filepath.Join(r.Manager.Root, "projects/omni/many")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var want []string
		for i := range defaultListEntries + 5 {
			want = append(want, fmt.Sprintf("f%05d", i))
		}
		// Not UTF-8: as JSON, "\xf0…" and "\xff" would both be U+FFFD
		// (0xef…), which sorts before them.
		want = append(want, "x\xf0a", "x\xf0b", "x\xfe", "x\xff")
		// Made in descending order, so no page can come from the directory's order.
		for _, name := range slices.Backward(want) {
			if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		list := func(query string) apiv1.Listing {
			t.Helper()
			resp, body := do(t, http.MethodGet, filesURL(srv.URL, "omni", "many")+query, nil)
			var l apiv1.Listing
			if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &l) != nil {
				t.Fatalf("listing %s: %d %.300s", query, resp.StatusCode, body)
			}
			return l
		}
		if l := list(""); len(l.Entries) != defaultListEntries || l.NextCursor == "" || l.Entries[len(l.Entries)-1].Name != want[defaultListEntries-1] {
			t.Errorf("a listing without ?limit=: %d entries, next_cursor %q; want the first %d and a cursor", len(l.Entries), l.NextCursor, defaultListEntries)
		}
		var seen int
		for cursor, pages := "", 0; ; pages++ {
			if pages > len(want) {
				t.Fatal("the pages never end")
			}
			l := list("?limit=2&cursor=" + cursor)
			seen += len(l.Entries)
			if l.NextCursor == "" {
				break
			}
			cursor = l.NextCursor
		}
		// The names themselves: the raw bytes come back only through the cursor.
		var names []string
		for cursor := ""; ; {
			l := list("?limit=300&cursor=" + cursor)
			for _, e := range l.Entries {
				names = append(names, e.Name)
			}
			if l.NextCursor == "" {
				break
			}
			cursor = l.NextCursor
		}
		if seen != len(want) || len(names) != len(want) {
			t.Fatalf("the pages listed %d and %d names, want %d, each once", seen, len(names), len(want))
		}
		for i, name := range names[:defaultListEntries+5] {
			if name != want[i] {
				t.Fatalf("name %d of the pages is %q, want %q (sorted)", i, name, want[i])
			}
		}
		for _, q := range []string{fmt.Sprintf("?limit=%d", maxListEntries+1), "?cursor=not*base64"} {
			resp, body := do(t, http.MethodGet, filesURL(srv.URL, "omni", "many")+q, nil)
			wantStatus(t, "listing "+q, resp, body, http.StatusBadRequest)
		}
	})
}

// TestFilesDownloadOfAGrowingFile: what a tenant appends after the file
// was opened is not served under the validators of the size it had then:
// the body, Content-Length and Content-Range stop at that size.
func TestFilesDownloadOfAGrowingFile(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<20, "omni")
		p := filepath.Join(r.Manager.Root, "projects/omni/grow")
		if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
			t.Fatal(err)
		}
		l := r.Files()
		for _, tc := range []struct{ rng, body, contentRange string }{
			{"", "0123456789", ""},
			{"bytes=5-", "56789", "bytes 5-9/10"},
		} {
			f, e, err := l.Open(context.Background(), "omni", "", "grow")
			if err != nil {
				t.Fatal(err)
			}
			app, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			app.WriteString("APPENDED")
			app.Close()
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			if tc.rng != "" {
				req.Header.Set("Range", tc.rng)
			}
			rec := httptest.NewRecorder()
			serveOpened(rec, req, f, e)
			f.Close()
			if got := rec.Body.String(); got != tc.body || rec.Header().Get("Content-Length") != strconv.Itoa(len(tc.body)) ||
				rec.Header().Get("Content-Range") != tc.contentRange {
				t.Errorf("Range %q after an append: %q %v, want %q (the size the ETag names)", tc.rng, got, rec.Header(), tc.body)
			}
			os.WriteFile(p, []byte("0123456789"), 0o644)
		}
	})
}

// TestFilesOfTheInboundTree: the file API reaches the root's inbound tree
// as project _root with ?area=inbound, admits uploads against its limit
// (default_inbound_quota: 507 past it), and refuses a project's "inbound".
func TestFilesOfTheInboundTree(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<20, "omni")
		if _, _, err := r.Manager.SetSetting(r.Ctx, "default_inbound_quota", "32k"); err != nil {
			t.Fatal(err)
		}
		srv := storageTestServer(t, operator, filesRoutes(r))
		resp, body := put(t, filesURL(srv.URL, sandbox.RootOwner, "chan1/msg")+"?area=inbound", "staged")
		wantStatus(t, "upload into the inbound tree", resp, body, http.StatusCreated)
		if b, err := os.ReadFile(filepath.Join(r.Manager.Root, "inbound/chan1/msg")); err != nil || string(b) != "staged" {
			t.Errorf("?area=inbound wrote elsewhere: %v %q", err, b)
		}
		resp, body = do(t, http.MethodGet, filesURL(srv.URL, sandbox.RootOwner, "chan1")+"?area=inbound", nil)
		var l apiv1.Listing
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &l) != nil || l.Area != area.Inbound || len(l.Entries) != 1 || l.Entries[0].Name != "msg" {
			t.Errorf("listing of inbound/chan1: %d %s", resp.StatusCode, body)
		}
		resp, body = put(t, filesURL(srv.URL, sandbox.RootOwner, "chan1/big")+"?area=inbound", strings.Repeat("x", 64<<10))
		wantStatus(t, "64 KiB into a 32 KiB inbound tree", resp, body, http.StatusInsufficientStorage)
		resp, body = put(t, filesURL(srv.URL, "omni", "x")+"?area=inbound", "x")
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, sandbox.RootOwner) {
			t.Errorf("a project's inbound: %d %s, want 400 naming %s", resp.StatusCode, body, sandbox.RootOwner)
		}
		resp, body = put(t, filesURL(srv.URL, sandbox.RootOwner, "x"), "x")
		wantStatus(t, "_root's workspace", resp, body, http.StatusBadRequest)
	})
}

// The saved name says what the file is: in both forms of the header, what
// would break a line or make the name read otherwise than it is becomes
// "_"; other characters, non-ASCII ones too, are kept in filename*.
func TestContentDispositionNeverLies(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"notes.txt", `attachment; filename="notes.txt"; filename*=UTF-8''notes.txt`},
		{"ünï.txt", `attachment; filename="_n_.txt"; filename*=UTF-8''%C3%BCn%C3%AF.txt`},
		{"inv\u202etxt.exe", `attachment; filename="inv_txt.exe"; filename*=UTF-8''inv_txt.exe`},
		{"a\r\nb", `attachment; filename="a__b"; filename*=UTF-8''a__b`},
		{"z\u200bw\u2028x", `attachment; filename="z_w_x"; filename*=UTF-8''z_w_x`},
		{"bad\xff", `attachment; filename="bad_"; filename*=UTF-8''bad_`},
		{`q"b\`, `attachment; filename="q_b_"; filename*=UTF-8''q%22b%5C`},
	} {
		if got := ContentDisposition(c.name); got != c.want {
			t.Errorf("ContentDisposition(%q) = %s, want %s", c.name, got, c.want)
		}
	}
}

// The tree changing under a request (renames beside a path through a link
// of many "..", which makes the kernel give up resolving it) answers 409,
// a collision to retry, for a download and an upload alike: never 500.
func TestFilesAmidRenamesAnswerConflict(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<20, "omni")
		srv := storageTestServer(t, operator, filesRoutes(r))
		tree := filepath.Join(r.Manager.Root, "projects/omni")
		os.MkdirAll(filepath.Join(tree, "d/e"), 0o755)
		os.WriteFile(filepath.Join(tree, "d/e/f"), []byte("hi"), 0o644)
		os.Symlink(strings.Repeat("d/e/../../", 200)+"d/e", filepath.Join(tree, "L"))
		os.Mkdir(filepath.Join(tree, "r1"), 0o755)
		stop := tenanttest.Loop(t, func() {
			os.Rename(filepath.Join(tree, "r1"), filepath.Join(tree, "r2"))
			os.Rename(filepath.Join(tree, "r2"), filepath.Join(tree, "r1"))
		})
		seen := map[string]map[int]int{"GET": {}, "PUT": {}, "POST": {}}
		allConflicted := func() bool { return seen["GET"][409] > 0 && seen["PUT"][409] > 0 && seen["POST"][409] > 0 }
		// The collisions are a race with the renaming loop: a busy machine
		// may need more rounds to meet one of each, so the rounds go on
		// (bounded) until every method has.
		deadline := time.Now().Add(20 * time.Second)
		for i := 0; i < 60 || (!allConflicted() && time.Now().Before(deadline)); i++ {
			resp, body := do(t, http.MethodGet, filesURL(srv.URL, "omni", "L/f"), nil)
			seen["GET"][resp.StatusCode]++
			if resp.StatusCode >= 500 {
				t.Errorf("GET amid renames: %d %s", resp.StatusCode, body)
			}
			method := map[bool]string{true: http.MethodPut, false: http.MethodPost}[i%2 == 0]
			resp, body = do(t, method, filesURL(srv.URL, "omni", fmt.Sprintf("L/n%d", i)), strings.NewReader("x"))
			seen[method][resp.StatusCode]++
			if resp.StatusCode >= 500 {
				t.Errorf("%s amid renames: %d %s", method, resp.StatusCode, body)
			}
		}
		stop()
		if !allConflicted() {
			t.Errorf("no 409 amid renames (the kernel resolved every path): %v", seen)
		}
	})
}
