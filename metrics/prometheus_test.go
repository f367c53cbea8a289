package metrics_test

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
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/health"
	"github.com/xfsq/xfsq/internal/fixture"
	"github.com/xfsq/xfsq/internal/prereq"
	"github.com/xfsq/xfsq/metrics"
	"github.com/xfsq/xfsq/project"
	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/sweep"
)

// tool finds promtool or prometheus (Debian package prometheus), or skips
// the test — fails it under CI=true.
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		prereq.Missing(t, name+" not found: install the Debian package prometheus (scripts/deps.sh test does)")
	}
	return p
}

const contrib = "../contrib"

// busyRoot is a root with every kind of series: trees, a deletion, a
// failed one, a sweep and a snapshot pass, so that histograms and counters
// are in the scrape too.
func busyRoot(t *testing.T) *fixture.Root {
	t.Helper()
	r := fixture.New(t, "sqlite", filepath.Join(t.TempDir(), "xfsq.db"))
	m, ctx := r.Manager, r.Ctx
	r.Add(10<<20, "a", "b")
	if err := m.Store.AddLedger(ctx, store.TreeKey{Project: "a", Area: project.AreaWorkspace}, 5<<20, 3, "test", time.Time{}); err != nil {
		t.Fatal(err)
	}
	for _, st := range []string{sweep.StateDone, sweep.StateFailed} {
		rec := sweep.Record{SweepID: "s", Area: project.AreaCache, Path: "cache/b/" + st, Bytes: 4096, State: st}
		if err := m.Store.InTx(ctx, func(tx *store.Tx) error { return tx.AppendEvent(ctx, store.EventEvicted, "b", "test", rec) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Store.InTx(ctx, func(tx *store.Tx) error {
		return tx.AppendEvent(ctx, store.EventSwept, "", "test", map[string]any{"duration_ms": 1200})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Snapshot(ctx, project.SnapshotOptions{Scheduled: true}); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestPromtoolChecksAScrape: a real scrape, host figures included, passes
// promtool check metrics (the exposition format and its naming lint).
func TestPromtoolChecksAScrape(t *testing.T) {
	promtool := tool(t, "promtool")
	r := busyRoot(t)
	checker, err := health.New(health.Options{Root: r.Manager.Root, CPUSampleInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	body := get(t, serve(t, r, checker))
	for _, want := range []string{metrics.TreeUsedBytes, metrics.SweepDurationSeconds + "_bucket", metrics.WalkDurationSeconds + "_bucket",
		metrics.SweepEvictedBytesTotal, metrics.HostMemoryTotalBytes, metrics.HostDiskTotalBytes, "go_goroutines"} {
		if !strings.Contains(body, "\n"+want) {
			t.Errorf("the scrape has no %s", want)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestContribRules: the alert rules load, and their unit tests (series
// that fire each alert and series that must not) pass.
func TestContribRules(t *testing.T) {
	promtool := tool(t, "promtool")
	dir := filepath.Join(contrib, "prometheus")
	for _, args := range [][]string{{"check", "rules", "xfsq-alerts.yml"}, {"test", "rules", "xfsq-alerts.test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestContribScrapeConfig: the fleet scrape config example is one
// Prometheus accepts, with the rules it names.
func TestContribScrapeConfig(t *testing.T) {
	promtool := tool(t, "promtool")
	data, err := os.ReadFile(filepath.Join(contrib, "prometheus", "prometheus-fleet.yml"))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := filepath.Abs(filepath.Join(contrib, "prometheus", "xfsq-alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(data), "/etc/prometheus/rules/xfsq-alerts.yml", rules, 1)
	if cfg == string(data) {
		t.Fatal("the example no longer names /etc/prometheus/rules/xfsq-alerts.yml")
	}
	path := filepath.Join(t.TempDir(), "prometheus.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "config", path).CombinedOutput(); err != nil {
		t.Errorf("promtool check config: %v\n%s", err, out)
	}
}

var xfsqName = regexp.MustCompile(`\bxfsq_[a-z0-9_]+`)

// exported is every series name metrics.All makes (histograms' too).
func exported() map[string]bool {
	names := map[string]bool{}
	for _, m := range metrics.All {
		names[m.Name] = true
		if m.Type == "histogram" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[m.Name+s] = true
			}
		}
	}
	return names
}

// TestContribQueriesExist: every xfsq series the dashboard and the alert
// rules query is one metrics.All exports, so a rename cannot leave a panel
// or an alert silently empty.
func TestContribQueriesExist(t *testing.T) {
	names := exported()
	data, err := os.ReadFile(filepath.Join(contrib, "grafana", "xfsq-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("the dashboard is not valid JSON: %v", err)
	}
	queried := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, n := range xfsqName.FindAllString(tg.Expr, -1) {
				queried++
				if !names[n] {
					t.Errorf("dashboard panel %q queries %s, which xfsq does not export", p.Title, n)
				}
			}
		}
	}
	if queried == 0 {
		t.Fatal("the dashboard queries no xfsq series")
	}
	rules, err := os.ReadFile(filepath.Join(contrib, "prometheus", "xfsq-alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range xfsqName.FindAllString(string(rules), -1) {
		if !names[n] {
			t.Errorf("an alert rule queries %s, which xfsq does not export", n)
		}
	}
}

// TestPrometheusScrapes: a real Prometheus server scrapes the handler,
// and its query API returns each workspace's used bytes as the library's
// Report gives them.
func TestPrometheusScrapes(t *testing.T) {
	prom := tool(t, "prometheus")
	r := busyRoot(t)
	target := serve(t, r, nil)
	api := startPrometheus(t, prom, target)
	report, err := r.Manager.Report(r.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range report {
		if tr.Area != project.AreaWorkspace {
			continue
		}
		q := fmt.Sprintf(`%s{project=%q,area="workspace"}`, metrics.TreeUsedBytes, tr.Project)
		got := queryOne(t, api, q)
		if got != float64(tr.UsedBytes) {
			t.Errorf("%s = %v in Prometheus, report says %d", q, got, tr.UsedBytes)
		}
	}
}

// startPrometheus runs a Prometheus server scraping target (a URL) every
// second, on a free port and a temporary store, until the test ends, and
// returns its API's base URL.
func startPrometheus(t *testing.T, prom, target string) string {
	t.Helper()
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

// queryOne waits (up to a minute) for an instant query to return one
// series, and returns its value.
func queryOne(t *testing.T, api, q string) float64 {
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
