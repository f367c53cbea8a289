package server_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
)

// TestAdmissionRefreshIsSharedWithinTheWindow: GET …/admission?refresh=1 is a
// refresh as the overview's is, so a reader (a limited one too) asking it
// again and again within refresh_window must share one walk, not make the
// server walk a tree the tenant fills with names each time (#33 §3).
func TestAdmissionRefreshIsSharedWithinTheWindow(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(10<<20, "other")
		ts := newServer(t, r)
		const path = "/v1/workspace/storage/projects/other/admission?refresh=1"
		workspaceBytes := func() float64 {
			t.Helper()
			code, _, body := ts.raw(t, http.MethodGet, path, limitedToken, "")
			var a struct {
				Trees []struct {
					Area      string  `json:"area"`
					UsedBytes float64 `json:"used_bytes"`
				} `json:"trees"`
			}
			if code != 200 || json.Unmarshal([]byte(body), &a) != nil {
				t.Fatalf("admission: %d %s", code, body)
			}
			for _, tr := range a.Trees {
				if tr.Area == "workspace" {
					return tr.UsedBytes
				}
			}
			t.Fatalf("no workspace tree in %s", body)
			return 0
		}
		before := workspaceBytes()
		// Written outside xfsq: only a walk sees it.
		if err := os.WriteFile(filepath.Join(r.Manager.Root, "projects/other/new"), make([]byte, 1<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			if got := workspaceBytes(); got != before {
				t.Fatalf("refresh %d within refresh_window walked again: %v bytes, were %v", i+2, got, before)
			}
		}
	})
}

// TestRefusalDrainIsBoundInTime: the drain of a refused body must not let
// a client that sends it a few bytes at a time hold the connection (and
// its answer) for as long as it likes: without a token, nothing of the
// request is the server's business, yet today the 401 waits until 8 MiB
// arrived or the read timeout (10 min in serve) ends it. Any local process
// (or a page in the operator's browser) can hold connections that way.
func TestRefusalDrainIsBoundInTime(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<20, "omni")
		ts := newServer(t, r)
		conn, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "PUT /v1/workspace/storage/projects/omni/files/big HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n",
			ts.Listener.Addr(), 8<<20)
		sent := time.Now()
		answered, closed := make(chan string, 1), make(chan struct{})
		go func() {
			rd := bufio.NewReader(conn)
			line, _ := rd.ReadString('\n')
			answered <- line
			io.Copy(io.Discard, rd) // until the server closes
			close(closed)
		}()
		deadline := time.After(5 * time.Second)
		for {
			select {
			case line := <-answered:
				if !strings.Contains(line, "401") {
					t.Fatalf("answer %q, want 401", line)
				}
				// Before the drain ends, not after it: the answer goes first.
				if waited := time.Since(sent); waited >= time.Second {
					t.Fatalf("the 401 came %v after the request: it waited for the drain", waited)
				}
				answered = nil
			case <-closed:
				if answered != nil {
					t.Fatal("closed without an answer")
				}
				return
			case <-deadline:
				if answered != nil {
					t.Fatal("a client trickling its body got no answer to a request without a token within 5 s: the drain holds the answer")
				}
				t.Fatal("a client trickling its body still holds the connection 5 s after its answer: the drain has no time bound")
			case <-time.After(100 * time.Millisecond):
				conn.Write([]byte("xxxxxxxxxx"))
			}
		}
	})
}

// TestRefusalReachesAnExpectClientThatDidNotWait: a client may send Expect: 100-continue
// and its body without waiting for the 100 (RFC 9110 §10.1.1 allows it; a
// Go http.Transport with ExpectContinueTimeout 0 does so). The refusal
// must reach it as it reaches a client that never said Expect: today the
// drain skips such a body and the client is reset every time.
func TestRefusalReachesAnExpectClientThatDidNotWait(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<20, "omni")
		ts := newServerWith(t, r, serverOptions{listener: func(ln net.Listener) net.Listener { return smallBuffers{ln} }})
		addr := ts.Listener.Addr().String()
		for i := range 10 {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			conn.(*net.TCPConn).SetWriteBuffer(64 << 10)
			conn.SetDeadline(time.Now().Add(20 * time.Second))
			const size = 3 << 20
			head := fmt.Sprintf("PUT /v1/workspace/storage/projects/omni/files/big HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
				"Content-Length: %d\r\nExpect: 100-continue\r\n\r\n", addr, operatorToken, size)
			_, werr := conn.Write(append([]byte(head), make([]byte, size)...))
			resp, rerr := http.ReadResponse(bufio.NewReader(conn), nil)
			conn.Close()
			// A client that writes before it reads (urllib) gives up at a
			// failed write: the answer must not need it to read on.
			if werr != nil || rerr != nil {
				t.Fatalf("try %d: the body could not be sent (%v) or no answer came (%v)", i+1, werr, rerr)
			}
			if resp.StatusCode != http.StatusInsufficientStorage {
				t.Fatalf("try %d: %d, want 507", i+1, resp.StatusCode)
			}
		}
	})
}

// TestRepeatedQueryParameterIsRefused: on every route, a parameter that
// takes one value given twice is refused, 400 naming it, as a repeated
// dry_run is: which one counted was a guess the client could not see (the
// diff and events routes took the first). A write or a deletion so asked
// does nothing.
func TestRepeatedQueryParameterIsRefused(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<20, "omni")
		dir := filepath.Join(r.Manager.Root, "projects", "omni")
		if err := os.WriteFile(filepath.Join(dir, "keep"), []byte("kept"), 0o644); err != nil {
			t.Fatal(err)
		}
		ts := newServer(t, r)
		const p, s = "/v1/workspace/storage/projects/omni", "/v1/workspace/storage"
		for _, c := range []struct{ method, path, param string }{
			{"GET", s + "?refresh=1&refresh=1", "refresh"},
			{"GET", s + "/summary?refresh=0&refresh=0", "refresh"},
			{"GET", p + "?depth=1&depth=2", "depth"},
			{"GET", p + "/diff?since=1h&since=2h", "since"},
			{"GET", p + "/diff?top=1&top=2", "top"},
			{"GET", p + "/diff?area=a&area=b", "area"},
			{"GET", p + "/history?points=2&points=3", "points"},
			{"GET", s + "/history?since=1h&since=2h", "since"},
			{"GET", s + "/events?type=a&type=b", "type"},
			{"GET", s + "/events?project=omni&project=omni", "project"},
			{"GET", s + "/events?cursor=a&cursor=b", "cursor"},
			{"GET", s + "/events?since=1h&since=2h", "since"},
			{"GET", s + "/events?limit=1&limit=2", "limit"},
			{"GET", s + "/events?all_hosts=false&all_hosts=false", "all_hosts"},
			{"GET", s + "/report?sort=name&sort=used", "sort"},
			{"GET", s + "/report?over=1&over=2", "over"},
			{"GET", s + "/report?check=1&check=0", "check"},
			{"GET", p + "/files/?limit=1&limit=2", "limit"},
			{"GET", p + "/files/?cursor=&cursor=", "cursor"},
			{"GET", p + "/files/?area=a&area=b", "area"},
			{"GET", p + "/files/keep?area=a&area=b", "area"},
			{"PUT", p + "/files/new?area=a&area=b", "area"},
			{"DELETE", p + "/files/keep?area=a&area=b", "area"},
			{"DELETE", p + "/files/keep?recursive=0&recursive=0", "recursive"},
		} {
			content := ""
			if c.method == "PUT" {
				content = "new"
			}
			code, _, body := ts.raw(t, c.method, c.path, operatorToken, content)
			if code != http.StatusBadRequest || !strings.Contains(body, "query parameter "+c.param+" given 2 times: give it once") {
				t.Errorf("%s %s: %d %s; want 400 naming %s given twice", c.method, c.path, code, body, c.param)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "keep")); err != nil {
			t.Errorf("a refused DELETE removed the file: %v", err)
		}
		if _, err := os.Lstat(filepath.Join(dir, "new")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a refused PUT wrote the file: %v", err)
		}
	})
}

// TestDryRunGivenTwiceIsRefused: a dry run named twice with values that
// disagree (a client appending dry_run=1 to a URL that holds dry_run=0)
// must not delete for real: today the first value wins, so
// ?dry_run=0&dry_run=1 removes the project while ?dry_run=1&dry_run=0
// does not. Refused (400, naming the parameter), never the real call.
func TestDryRunGivenTwiceIsRefused(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<20, "omni")
		ts := newServer(t, r)
		for _, q := range []string{"dry_run=1&dry_run=0", "dry_run=0&dry_run=1"} {
			code, _, body := ts.raw(t, http.MethodDelete, "/v1/workspace/storage/projects/omni?"+q, operatorToken, "")
			if code, _, _ := ts.raw(t, http.MethodGet, "/v1/workspace/storage/projects/omni", operatorToken, ""); code != http.StatusOK {
				t.Fatalf("DELETE ?%s removed the project (answered %s); a repeated dry_run must be refused or dry", q, body)
			}
			if code != http.StatusBadRequest || !strings.Contains(body, "dry_run given 2 times: give it once") {
				t.Errorf("DELETE ?%s: %d %s; want 400 naming dry_run given twice", q, code, body)
			}
		}
	})
}
