// Package promtest runs a real Prometheus server for tests: one scraping a
// target every second on a free port and a temporary store, and its query
// API asked until a series answers. It is test support, never imported by
// a library or a shell.
package promtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// Tool is the path of one of the Debian package prometheus's programs
// (prometheus, promtool); missing, the test is skipped, or fails in CI.
func Tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		prereq.Missing(t, name+" not found: install the Debian package prometheus (scripts/deps.sh test does)")
	}
	return p
}

// Start runs a Prometheus server scraping target (a URL) every
// second, on a free port and a temporary store, until the test ends, and
// returns its API's base URL.
func Start(t *testing.T, target string) string {
	t.Helper()
	prom := Tool(t, "prometheus")
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: xfsq
    scheme: %s
    metrics_path: %s
    static_configs:
      - targets: [%q]
`, u.Scheme, u.Path, u.Host)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command(prom, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus:\n%s", logs.String())
		}
	})
	return "http://" + addr
}

// QueryOne waits (up to a minute) for an instant query to return one
// series, and returns its value.
func QueryOne(t *testing.T, api, q string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		var res struct {
			Status string
			Data   struct {
				Result []struct {
					Value [2]any
				}
			}
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, api+"/api/v1/query?query="+url.QueryEscape(q), nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&res)
			resp.Body.Close()
		}
		if err == nil && res.Status == "success" && len(res.Data.Result) == 1 {
			s, _ := res.Data.Result[0].Value[1].(string)
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("%s: value %v", q, res.Data.Result[0].Value)
			}
			return v
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: no single series from Prometheus within a minute (last: %v, %+v)", q, err, res)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
