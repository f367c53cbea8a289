package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/xfsq/xfsq/client"
)

// served is `xfsq serve` running as its own process.
type served struct {
	t    *testing.T
	cmd  *exec.Cmd
	addr string
	mu   sync.Mutex
	log  []string
	done chan struct{}
	code int
}

func (s *testRoot) serve(t *testing.T, tokenFile string, extra ...string) *served {
	t.Helper()
	args := []string{"--root", s.root}
	if s.db != "" {
		args = append(args, "--db", s.db)
	}
	args = append(append(args, "serve", "--listen", "127.0.0.1:0", "--token-file", tokenFile, "--grace", "20s"), extra...)
	cmd := exec.Command(os.Getenv(envBinary), args...)
	cmd.Env = append(os.Environ(), s.env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sv := &served{t: t, cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			sv.mu.Lock()
			sv.log = append(sv.log, line)
			sv.mu.Unlock()
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" {
				addr <- rec.Addr
			}
		}
		cmd.Wait()
		sv.code = cmd.ProcessState.ExitCode()
		close(sv.done)
	}()
	t.Cleanup(func() {
		select {
		case <-sv.done:
		default:
			cmd.Process.Kill()
			<-sv.done
		}
	})
	select {
	case sv.addr = <-addr:
	case <-sv.done:
		t.Fatalf("serve exited %d before listening:\n%s", sv.code, sv.logs())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not listen within 30 s:\n%s", sv.logs())
	}
	return sv
}

func (sv *served) logs() string {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return strings.Join(sv.log, "\n")
}

// waitLog waits for a log line containing s.
func (sv *served) waitLog(s string) {
	sv.t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(sv.logs(), s) {
			return
		}
	}
	sv.t.Fatalf("no log line with %q:\n%s", s, sv.logs())
}

func (sv *served) client(token string) *client.Client {
	return client.New("http://"+sv.addr, token, &http.Client{Timeout: 10 * time.Second})
}

func writeTokens(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path+".new", []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

func TestServeRefusesWithoutSafeTokenFile(t *testing.T) {
	s := newSandbox(t, t.TempDir(), "")
	s.ok("init")
	if r := s.run("serve"); r.code != 2 || !strings.Contains(r.stderr, "--token-file") {
		t.Errorf("serve without a token file: exit %d %q, want 2 naming --token-file", r.code, r.stderr)
	}
	f := filepath.Join(t.TempDir(), "tokens.csv")
	os.WriteFile(f, []byte("a-secret-token-0123456789,ci,operator\n"), 0o644)
	os.Chmod(f, 0o644)
	if r := s.run("serve", "--token-file", f); r.code != 2 || !strings.Contains(r.stderr, "chmod 600") || strings.Contains(r.stderr, "a-secret-token") {
		t.Errorf("serve with a world-readable token file: exit %d %q, want 2 with the fix and no token", r.code, r.stderr)
	}
}

// serve refuses to start on the example token file as shipped, naming
// the file and line; xfsq token new makes a token and the line that lets
// it in, and nothing else.
func TestTokenNewAndTheExampleFile(t *testing.T) {
	s := newSandbox(t, t.TempDir(), "")
	s.ok("init")
	s.ok("project", "add", "omni")
	example, err := os.ReadFile("../../contrib/xfsq-tokens.csv.example")
	if err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	writeTokens(t, tokens, string(example))
	if r := s.run("serve", "--token-file", tokens); r.code != 2 || !strings.Contains(r.stderr, tokens+" line 12") || !strings.Contains(r.stderr, "xfsq token new") {
		t.Errorf("serve on the example token file: exit %d %q, want 2 naming the file, the line and xfsq token new", r.code, r.stderr)
	}
	var made struct{ Token, Line string }
	s.json(&made, "token", "new", "ci", "operator")
	if len(made.Token) != 64 || !strings.HasPrefix(made.Line, "sha256:") || !strings.HasSuffix(made.Line, ",ci,operator") || strings.Contains(made.Line, made.Token) {
		t.Fatalf("token new: %+v", made)
	}
	if out := s.ok("token", "new", "dash", "reader", "--projects", "omni"); !strings.Contains(out, "token: ") || !strings.Contains(out, `,dash,reader,"omni"`) {
		t.Errorf("token new for a limited reader said:\n%s", out)
	}
	if r := s.run("token", "new", "ci", "admin"); r.code != 2 || !strings.Contains(r.stderr, `role "admin"`) {
		t.Errorf("token new with a bad role: exit %d %q, want 2 naming the role", r.code, r.stderr)
	}
	writeTokens(t, tokens, made.Line+"\n")
	sv := s.serve(t, tokens)
	if a, err := sv.client(made.Token).Admission(context.Background(), "omni", false); err != nil || a.Decision != "ok" {
		t.Errorf("admission with the new token: %v %+v", err, a)
	}
}

// TestServeReloadAndShutdown runs the real binary: a SIGHUP reload takes
// the new tokens, a bad file on reload keeps them; on SIGTERM a request in
// flight completes, a new connection is refused, and serve exits 0.
func TestServeReloadAndShutdown(t *testing.T) {
	s := newSandbox(t, t.TempDir(), "")
	s.ok("init")
	s.ok("project", "add", "omni", "--bytes-hard", "10m")
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	const first, second = "first-token-0123456789", "second-token-0123456789"
	writeTokens(t, tokens, first+",ci,operator\n")
	sv := s.serve(t, tokens)
	ctx := context.Background()
	if err := sv.client("").Ready(ctx); err != nil {
		t.Fatalf("readyz: %v", err)
	}
	if a, err := sv.client(first).Admission(ctx, "omni", false); err != nil || a.Decision != "ok" {
		t.Fatalf("admission: %v %+v", err, a)
	}
	// The binary serves the whole route table: the metrics, the overview,
	// the files and the description, not only the core's routes.
	if m, err := sv.client("").Metrics(ctx); err != nil || !strings.Contains(m, "xfsq_collector_success") {
		t.Errorf("metrics of the binary: %v %.200q", err, m)
	}
	if ov, err := sv.client(first).Overview(ctx, false); err != nil || len(ov.Projects) != 1 {
		t.Errorf("overview of the binary: %v %+v", err, ov)
	}
	if _, err := sv.client(first).Upload(ctx, "omni", "", "a.txt", strings.NewReader("hi"), 2); err != nil {
		t.Errorf("upload to the binary: %v", err)
	}
	if spec, err := sv.client("").OpenAPI(ctx); err != nil || !strings.Contains(string(spec), `"openapi": "3.1.0"`) {
		t.Errorf("openapi.json of the binary: %v", err)
	}

	writeTokens(t, tokens, second+",ci2,operator\n")
	sv.cmd.Process.Signal(syscall.SIGHUP)
	sv.waitLog("token file reloaded")
	if _, err := sv.client(second).Admission(ctx, "omni", false); err != nil {
		t.Errorf("the new token after SIGHUP: %v", err)
	}
	if _, err := sv.client(first).Admission(ctx, "omni", false); err == nil || !strings.HasPrefix(err.Error(), "401") {
		t.Errorf("the old token after SIGHUP: %v, want 401", err)
	}
	writeTokens(t, tokens, second+",ci2,superuser\n")
	sv.cmd.Process.Signal(syscall.SIGHUP)
	sv.waitLog("token file not reloaded")
	if _, err := sv.client(second).Admission(ctx, "omni", false); err != nil {
		t.Errorf("after a bad reload the tokens in force must stay: %v", err)
	}

	// A request in flight: its body arrives in two halves, SIGTERM between.
	body, half := io.Pipe()
	req, _ := http.NewRequest("POST", "http://"+sv.addr+"/v1/workspace/storage/projects", body)
	req.Header.Set("Authorization", "Bearer "+second)
	type answer struct {
		status int
		err    error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- answer{0, err}
			return
		}
		resp.Body.Close()
		got <- answer{resp.StatusCode, nil}
	}()
	fmt.Fprint(half, `{"project": `)
	time.Sleep(200 * time.Millisecond) // the server has the headers: the request is in flight
	sv.cmd.Process.Signal(syscall.SIGTERM)
	sv.waitLog("stopping")
	if c, err := net.DialTimeout("tcp", sv.addr, time.Second); err == nil {
		c.Close()
		t.Error("a new connection was accepted after SIGTERM")
	}
	fmt.Fprint(half, `"late"}`)
	half.Close()
	if a := <-got; a.err != nil || a.status != 201 {
		t.Errorf("the request in flight at SIGTERM: %d %v, want 201", a.status, a.err)
	}
	select {
	case <-sv.done:
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not exit after SIGTERM")
	}
	if sv.code != 0 || !strings.Contains(sv.logs(), `"msg":"stopped"`) {
		t.Errorf("serve exited %d:\n%s", sv.code, sv.logs())
	}
	for _, tok := range []string{first, second} {
		if strings.Contains(sv.logs(), tok) {
			t.Errorf("the log contains a token:\n%s", sv.logs())
		}
	}
	if out := s.ok("project", "show", "late"); !strings.Contains(out, "late") {
		t.Errorf("the project added by the request in flight: %s", out)
	}
}

// TestServeTLS: with --tls-cert/--tls-key the API is HTTPS only.
func TestServeTLS(t *testing.T) {
	s := newSandbox(t, t.TempDir(), "")
	s.ok("init")
	dir := t.TempDir()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	tokens := filepath.Join(dir, "tokens.csv")
	writeTokens(t, tokens, "tls-token-0123456789abc,ci,reader\n")
	if r := s.run("serve", "--token-file", tokens, "--tls-cert", certFile); r.code != 2 || !strings.Contains(r.stderr, "--tls-key") {
		t.Errorf("--tls-cert alone: exit %d %q, want 2", r.code, r.stderr)
	}
	sv := s.serve(t, tokens, "--tls-cert", certFile, "--tls-key", keyFile)
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if err := client.New("https://"+sv.addr, "", hc).Ready(context.Background()); err != nil {
		t.Errorf("readyz over TLS: %v", err)
	}
	if resp, err := http.Get("http://" + sv.addr + "/healthz"); err == nil {
		if resp.StatusCode == 200 {
			t.Error("plain HTTP answered 200 on a TLS listener")
		}
		resp.Body.Close()
	}
}

// serve gives the collector four times Go's headroom, unless the
// operator's GOGC says otherwise: that is the operator's to set.
func TestServeGCHeadroom(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, c := range []struct {
		gogc string
		want int // the percent in force after; 100 is what was set before
	}{{"", serveGCPercent}, {"100", 100}, {"off", 100}, {"50", 100}} {
		debug.SetGCPercent(100)
		setServeGC(func(k string) string {
			if k == "GOGC" {
				return c.gogc
			}
			return ""
		})
		if got := debug.SetGCPercent(100); got != c.want {
			t.Errorf("GOGC=%q: the collector's percent is %d, want %d", c.gogc, got, c.want)
		}
	}
}

// serve bounds the memory the headroom may take, unless the operator's
// GOMEMLIMIT says otherwise.
func TestServeMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	for _, c := range []struct {
		env  string
		want int64
	}{{"", serveMemoryLimit}, {"1GiB", math.MaxInt64}} {
		debug.SetMemoryLimit(math.MaxInt64)
		setServeGC(func(k string) string {
			if k == "GOMEMLIMIT" {
				return c.env
			}
			return ""
		})
		if got := debug.SetMemoryLimit(-1); got != c.want {
			t.Errorf("GOMEMLIMIT=%q: the limit is %d, want %d", c.env, got, c.want)
		}
	}
	debug.SetGCPercent(100)
}

// serve listens on loopback unless told otherwise: /metrics, /healthz and
// /readyz need no token, and the bind address is what guards them.
func TestServeListensOnLoopbackByDefault(t *testing.T) {
	cmd := serveCommand(func(func(e env) error) cli.ActionFunc { return nil })
	for _, f := range cmd.Flags {
		if sf, ok := f.(*cli.StringFlag); ok && sf.Name == "listen" {
			host, _, err := net.SplitHostPort(sf.Value)
			if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
				t.Errorf("--listen defaults to %q: want a loopback address", sf.Value)
			}
			return
		}
	}
	t.Fatal("serve has no --listen flag")
}

// A client that sends its headers slowly, or keeps a connection idle,
// loses the connection after serve's bounds: it cannot hold one for ever.
func TestServeCutsOffSlowAndIdleClients(t *testing.T) {
	defer func(h, i time.Duration) { serveReadHeaderTimeout, serveIdleTimeout = h, i }(serveReadHeaderTimeout, serveIdleTimeout)
	serveReadHeaderTimeout, serveIdleTimeout = 300*time.Millisecond, 300*time.Millisecond
	hs := newHTTPServer(context.Background(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}), slog.New(slog.DiscardHandler))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	defer hs.Close()
	for _, c := range []struct{ name, send string }{
		{"headers never finished", "GET / HTTP/1.1\r\nHost: x\r\n"},
		{"idle after a request", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"},
	} {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(conn, c.send)
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		start := time.Now()
		got, err := io.ReadAll(conn) // until the server closes it
		conn.Close()
		if err != nil || time.Since(start) > 3*time.Second {
			t.Errorf("%s: the connection was still open after %s (%v; read %q)", c.name, time.Since(start).Round(time.Millisecond), err, got)
		}
	}
}

// TestServeOffLoopback: a non-loopback --listen without TLS is refused
// with the fix named, unless --insecure-listen; then the Host check
// answers the listen address, loopback names and --allowed-hosts only, and
// --metrics-token-file puts /metrics behind its token.
func TestServeOffLoopback(t *testing.T) {
	s := newSandbox(t, t.TempDir(), "")
	s.ok("init")
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	writeTokens(t, tokens, "off-loopback-0123456789,ci,reader\n")
	for _, listen := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		r := s.run("serve", "--token-file", tokens, "--listen", listen)
		if r.code != 2 || !strings.Contains(r.stderr, "--tls-cert") || !strings.Contains(r.stderr, "--insecure-listen") {
			t.Errorf("serve --listen %s without TLS: exit %d %q, want 2 naming --tls-cert and --insecure-listen", listen, r.code, r.stderr)
		}
	}
	if r := s.run("serve", "--token-file", tokens, "--allowed-hosts", "https://proxy.example"); r.code != 2 || !strings.Contains(r.stderr, "--allowed-hosts") {
		t.Errorf("serve --allowed-hosts with a URL: exit %d %q, want 2", r.code, r.stderr)
	}
	metricsFile := filepath.Join(dir, "metrics.token")
	const metricsToken = "scrape-0123456789abcdef0123"
	writeTokens(t, metricsFile, metricsToken+"\n")
	sv := s.serve(t, tokens, "--listen", "0.0.0.0:0", "--insecure-listen", "--allowed-hosts", "proxy.example,Other.Example",
		"--metrics-token-file", metricsFile)
	_, port, err := net.SplitHostPort(sv.addr)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path, host, token string) int {
		req, _ := http.NewRequest("GET", "http://127.0.0.1:"+port+path, nil)
		req.Host = host
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s (Host %s): %v", path, host, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		path, host, token string
		want              int
	}{
		{"/healthz", "proxy.example", "", 200},
		{"/healthz", "other.example:443", "", 200},
		{"/healthz", "localhost:" + port, "", 200},
		{"/healthz", "192.0.2.7:" + port, "", 200}, // an IP literal of the host: listening on every address
		{"/healthz", "rebind.attacker.example:" + port, "", 421},
		{"/metrics", "rebind.attacker.example", metricsToken, 421},
		{"/metrics", "localhost", "", 401},
		{"/metrics", "localhost", "off-loopback-0123456789", 401},
		{"/metrics", "localhost", metricsToken, 200},
	} {
		if got := get(c.path, c.host, c.token); got != c.want {
			t.Errorf("GET %s Host %s: %d, want %d", c.path, c.host, got, c.want)
		}
	}
}
