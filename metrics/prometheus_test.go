package metrics_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/health"
	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/internal/testsupport/promtest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/metrics"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

const contrib = "../contrib"

// busyRoot is a root with every kind of series: trees, a deletion, a
// failed one, a sweep and a snapshot pass, so that histograms and counters
// are in the scrape too.
func busyRoot(t *testing.T) *fixture.Root {
	t.Helper()
	r := fixture.New(t, "sqlite", filepath.Join(t.TempDir(), "xfsq.db"))
	m, ctx := r.Manager, r.Ctx
	r.Add(10<<20, "a", "b")
	if err := sandbox.TestStore(m).AddLedger(ctx, store.TreeKey{Project: "a", Area: area.Workspace}, 5<<20, 3, "test", time.Time{}); err != nil {
		t.Fatal(err)
	}
	for _, st := range []string{deletion.StateDone, deletion.StateFailed} {
		rec := deletion.Record{SweepID: "s", Area: area.Cache, Path: "cache/b/" + st, Bytes: 4096, State: st}
		if err := sandbox.TestStore(m).InTx(ctx, func(tx *store.Tx) error { return tx.AppendEvent(ctx, "b", "test", rec) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := sandbox.TestStore(m).InTx(ctx, func(tx *store.Tx) error {
		return tx.AppendEvent(ctx, "", "test", journal.Swept{DurationSeconds: 1.2})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Snapshot(ctx, sandbox.SnapshotOptions{Scheduled: true}); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestPromtoolChecksAScrape: a real scrape, host figures included, passes
// promtool check metrics (the exposition format and its naming lint).
func TestPromtoolChecksAScrape(t *testing.T) {
	promtool := promtest.Tool(t, "promtool")
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
	promtool := promtest.Tool(t, "promtool")
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
	promtool := promtest.Tool(t, "promtool")
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
	// promtool checks that the files the config names exist.
	dir := t.TempDir()
	for _, f := range []string{"/etc/prometheus/xfsq-metrics.token", "/etc/prometheus/xfsq-ca.pem"} {
		local := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(local, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg = strings.ReplaceAll(cfg, f, local)
	}
	path := filepath.Join(dir, "prometheus.yml")
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
	r := busyRoot(t)
	target := serve(t, r, nil)
	api := promtest.Start(t, target)
	report, err := r.Manager.Report(r.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range report {
		if tr.Area != area.Workspace {
			continue
		}
		q := fmt.Sprintf(`%s{project=%q,area="workspace"}`, metrics.TreeUsedBytes, tr.Project)
		got := promtest.QueryOne(t, api, q)
		if got != float64(tr.UsedBytes) {
			t.Errorf("%s = %v in Prometheus, report says %d", q, got, tr.UsedBytes)
		}
	}
}
