package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/server"
)

// rawUpload sends a PUT of size bytes over a connection of its own, as a
// client that writes its whole request before reading the answer does
// (Python's urllib); with expect it sends Expect: 100-continue and no body
// at all, waiting for the answer instead.
func rawUpload(t *testing.T, addr, path string, size int, expect bool) (*http.Response, string, error) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Buffers that cannot hold the body, as over a real network: the
	// client is still writing when the server answers.
	conn.(*net.TCPConn).SetWriteBuffer(64 << 10)
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	head := fmt.Sprintf("PUT %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n", path, addr, operatorToken, size)
	if expect {
		head += "Expect: 100-continue\r\n"
	}
	if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
		return nil, "", fmt.Errorf("write the head: %w", err)
	}
	if !expect {
		if _, err := conn.Write([]byte(strings.Repeat("x", size))); err != nil {
			return nil, "", fmt.Errorf("write the body: %w", err)
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, "", fmt.Errorf("read the answer: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp, string(b), fmt.Errorf("read the answer's body: %w", err)
	}
	return resp, string(b), nil
}

// TestRefusedUploadReachesTheClient: a 3 MiB upload into a project that
// cannot hold it, by a client that writes the whole body before reading,
// gets the 507 and its problem body every time, not a reset connection;
// one that sends Expect: 100-continue gets it without sending the body.
func TestRefusedUploadReachesTheClient(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<20, "omni")
		ts := newServerWith(t, r, serverOptions{listener: func(ln net.Listener) net.Listener { return smallBuffers{ln} }})
		addr := ts.Listener.Addr().String()
		const path = "/v1/workspace/storage/projects/omni/files/big"
		for i := range 50 {
			resp, body, err := rawUpload(t, addr, path, 3<<20, false)
			if err != nil {
				t.Fatalf("try %d: %v", i+1, err)
			}
			if resp.StatusCode != http.StatusInsufficientStorage || !strings.Contains(body, "https://xfsq.dev/problems/denied") {
				t.Fatalf("try %d: %d %s, want 507 with the denied problem", i+1, resp.StatusCode, body)
			}
		}
		resp, body, err := rawUpload(t, addr, path, 3<<20, true)
		if err != nil {
			t.Fatalf("Expect: 100-continue: %v", err)
		}
		if resp.StatusCode != http.StatusInsufficientStorage || !strings.Contains(body, "https://xfsq.dev/problems/denied") {
			t.Fatalf("Expect: 100-continue: %d %s, want 507 before the body", resp.StatusCode, body)
		}
	})
}

// smallBuffers accepts connections whose receive buffer is small and fixed
// (no autotuning to tens of MiB on loopback), as a WAN link's window is.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetReadBuffer(64 << 10)
	}
	return c, err
}

// TestMetricsToken: with a metrics token, /metrics answers only to it (as
// Prometheus sends it: Authorization: Bearer); not to no token, a wrong
// one, nor a token of the token file, even an operator's.
func TestMetricsToken(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<20, "omni")
		const metricsToken = "metrics-5e6f7a8b9c0d1e2f3a4b"
		ts := newServerWith(t, r, serverOptions{configure: func(c *server.Config) { c.MetricsToken = metricsToken }})
		for _, c := range []struct {
			token string
			want  int
		}{{"", 401}, {"wrong-token-0000000000", 401}, {operatorToken, 401}, {readerToken, 401}, {metricsToken, 200}} {
			status, h, body := ts.raw(t, "GET", "/metrics", c.token, "")
			if status != c.want {
				t.Errorf("/metrics with token %.4q…: %d, want %d: %.200s", c.token, status, c.want, body)
			}
			if status == 200 && !strings.Contains(body, `project="omni"`) {
				t.Errorf("/metrics with its token: no figures of omni: %.300s", body)
			}
			if status == 401 && (h.Get("WWW-Authenticate") == "" || strings.Contains(body, "omni")) {
				t.Errorf("/metrics refused: %v %s", h, body)
			}
		}
	})
}
