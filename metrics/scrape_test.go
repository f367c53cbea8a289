package metrics_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/health"
	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/internal/testsupport/prereq"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/metrics"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// sample is one line of the exposition format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// parse reads the text exposition format as xfsq writes it: label values
// are project names and the like, never with quotes or commas inside.
func parse(t testing.TB, text string) []sample {
	t.Helper()
	var out []sample
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		s := sample{labels: map[string]string{}, value: v}
		head := line[:i]
		if j := strings.IndexByte(head, '{'); j >= 0 {
			s.name = head[:j]
			for _, kv := range strings.Split(strings.TrimSuffix(head[j+1:], "}"), ",") {
				if kv == "" {
					continue
				}
				k, v, _ := strings.Cut(kv, "=")
				s.labels[k] = strings.Trim(v, `"`)
			}
		} else {
			s.name = head
		}
		out = append(out, s)
	}
	return out
}

// get fetches url's body.
func get(t testing.TB, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", url, resp.StatusCode, err, body)
	}
	return string(body)
}

// serve serves metrics.Handler of r (and of checker) and returns its URL.
func serve(t testing.TB, r *fixture.Root, checker *health.Checker) string {
	t.Helper()
	srv := httptest.NewServer(metrics.Handler(r.Root, checker, nil))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// find returns the samples of name whose labels include want.
func find(samples []sample, name string, want map[string]string) []sample {
	var out []sample
	for _, s := range samples {
		if s.name != name {
			continue
		}
		match := true
		for k, v := range want {
			if s.labels[k] != v {
				match = false
			}
		}
		if match {
			out = append(out, s)
		}
	}
	return out
}

func one(t testing.TB, samples []sample, name string, labels map[string]string) float64 {
	t.Helper()
	got := find(samples, name, labels)
	if len(got) != 1 {
		t.Fatalf("%s%v: %d series, want 1", name, labels, len(got))
	}
	return got[0].value
}

func tree(p, area string) map[string]string { return map[string]string{"project": p, "area": area} }

// TestScrapeIsTheLibrarysReport: every tree's usage and limits are what
// Report says, a tree at its hard limit shows xfsq_quota_exceeded 1, and
// a removed project's series are gone from the next scrape.
func TestScrapeIsTheLibrarysReport(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		r.Add(10<<20, "a", "b", "full")
		if err := sandbox.TestStore(m).AddLedger(ctx, store.TreeKey{Project: "b", Area: area.Workspace}, 3<<20, 4, "test", time.Time{}); err != nil {
			t.Fatal(err)
		}
		if err := sandbox.TestStore(m).AddLedger(ctx, store.TreeKey{Project: "full", Area: area.Workspace}, 10<<20, 1, "test", time.Time{}); err != nil {
			t.Fatal(err)
		}
		url := serve(t, r, nil)
		samples := parse(t, get(t, url))
		report, err := m.Report(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(report) != 3*len(area.OfProject)+1 { // and the inbound tree
			t.Fatalf("report has %d trees", len(report))
		}
		for _, tr := range report {
			l := tree(tr.Project, tr.Area)
			if got := one(t, samples, metrics.TreeUsedBytes, l); got != float64(tr.UsedBytes) {
				t.Errorf("%v used bytes %v, report %d", l, got, tr.UsedBytes)
			}
			if got := one(t, samples, metrics.TreeUsedInodes, l); got != float64(tr.UsedInodes) {
				t.Errorf("%v used inodes %v, report %d", l, got, tr.UsedInodes)
			}
			hard := map[string]string{"project": tr.Project, "area": tr.Area, "kind": "hard"}
			if got := one(t, samples, metrics.TreeLimitBytes, hard); got != float64(tr.BytesHard) {
				t.Errorf("%v hard limit %v, report %d", l, got, tr.BytesHard)
			}
			wantExceeded := 0.0
			if tr.Project == "full" && tr.Area == area.Workspace {
				wantExceeded = 1
			}
			if got := one(t, samples, metrics.QuotaExceeded, l); got != wantExceeded {
				t.Errorf("%v quota exceeded %v, want %v", l, got, wantExceeded)
			}
			if age := one(t, samples, metrics.TreeUsageAgeSeconds, l); age < 0 || age > 600 {
				t.Errorf("%v usage age %v s: the add's walk is seconds old", l, age)
			}
		}
		if got := one(t, samples, metrics.CollectorSuccess, map[string]string{"collector": "trees"}); got != 1 {
			t.Errorf("collector trees: %v", got)
		}
		if len(find(samples, metrics.CollectorSuccess, map[string]string{"collector": "docker"})) != 0 {
			t.Error("a docker collector without a health checker")
		}
		if len(find(samples, "go_goroutines", nil)) != 1 || len(find(samples, "process_resident_memory_bytes", nil)) != 1 {
			t.Error("no Go or process collector")
		}
		if _, err := m.Remove(ctx, "a", sandbox.RemoveOptions{}); err != nil {
			t.Fatal(err)
		}
		after := parse(t, get(t, url))
		for _, s := range after {
			if s.labels["project"] == "a" {
				t.Errorf("removed project a still has %s%v", s.name, s.labels)
			}
		}
		if n := len(find(after, metrics.TreeUsedBytes, nil)); n != 2*len(area.OfProject)+1 {
			t.Errorf("%d used-bytes series after removing a, want %d", n, 2*len(area.OfProject)+1)
		}
	})
}

// TestJournalCounters: deletions, sweeps and snapshot passes the journal
// records are counted once, however many scrapes read them.
func TestJournalCounters(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		r.Add(10<<20, "a")
		record := func(proj string, payload journal.Payload) {
			t.Helper()
			if err := sandbox.TestStore(m).InTx(ctx, func(tx *store.Tx) error { return tx.AppendEvent(ctx, proj, "test", payload) }); err != nil {
				t.Fatal(err)
			}
		}
		evict := func(bytes uint64, state string) {
			rec := deletion.Record{SweepID: "s", Area: area.Cache, Path: "cache/a/x" + state, Bytes: bytes, State: deletion.StatePending}
			record("a", rec)
			rec.State = state
			record("a", rec)
		}
		url := serve(t, r, nil)
		evict(1000, deletion.StateDone)
		evict(500, deletion.StatePartial)
		evict(0, deletion.StateFailed)
		record("", journal.Swept{DurationSeconds: 2.5})
		if _, err := m.Snapshot(ctx, sandbox.SnapshotOptions{Scheduled: true}); err != nil {
			t.Fatal(err)
		}
		for scrape := range 3 {
			s := parse(t, get(t, url))
			if got := one(t, s, metrics.SweepEvictedBytesTotal, tree("a", area.Cache)); got != 1500 {
				t.Errorf("scrape %d: evicted bytes %v, want 1500 (done + partial)", scrape, got)
			}
			if got := one(t, s, metrics.DeletionsFailedTotal, tree("a", area.Cache)); got != 1 {
				t.Errorf("scrape %d: failed deletions %v, want 1", scrape, got)
			}
			if got := one(t, s, metrics.SweepDurationSeconds+"_count", nil); got != 1 {
				t.Errorf("scrape %d: sweeps %v, want 1", scrape, got)
			}
			if got := one(t, s, metrics.SweepDurationSeconds+"_sum", nil); got != 2.5 {
				t.Errorf("scrape %d: sweep seconds %v, want 2.5", scrape, got)
			}
			if got := one(t, s, metrics.WalkDurationSeconds+"_count", tree("a", area.Workspace)); got != 1 {
				t.Errorf("scrape %d: walks of a/workspace %v, want 1", scrape, got)
			}
			if got := one(t, s, metrics.SnapshotLastPass, nil); time.Since(time.UnixMilli(int64(got*1000))) > time.Minute {
				t.Errorf("scrape %d: last pass at %v, want just now", scrape, got)
			}
		}
	})
}

// TestOneCollectorFails: with the Docker daemon unreachable and /proc
// without meminfo, those two collectors report 0 and export nothing,
// while the trees, disk and cpu answer in the same scrape.
func TestOneCollectorFails(t *testing.T) {
	r := fixture.New(t, "sqlite", filepath.Join(t.TempDir(), "xfsq.db"))
	r.Add(10<<20, "a")
	docker, err := health.NewDocker(health.DockerOptions{Host: "unix://" + filepath.Join(t.TempDir(), "no.sock")})
	if err != nil {
		t.Fatal(err)
	}
	defer docker.Close()
	checker, err := health.New(health.Options{Root: r.Manager.Root, ProcRoot: "../health/testdata/nomeminfo",
		CPUSampleInterval: -1, Budget: time.Second, Docker: docker})
	if err != nil {
		t.Fatal(err)
	}
	s := parse(t, get(t, serve(t, r, checker)))
	for c, want := range map[string]float64{"trees": 1, "journal": 1, "disk": 1, "cpu": 1, "memory": 0, "docker": 0} {
		if got := one(t, s, metrics.CollectorSuccess, map[string]string{"collector": c}); got != want {
			t.Errorf("collector %s: %v, want %v", c, got, want)
		}
	}
	for _, gone := range []string{metrics.DockerContainersRunning, metrics.DockerImagesBytes, metrics.HostMemoryTotalBytes} {
		if len(find(s, gone, nil)) != 0 {
			t.Errorf("%s exported from a failed collector", gone)
		}
	}
	if got := one(t, s, metrics.HostLoad5, nil); got != 0.4 {
		t.Errorf("load5 %v, want the fixture's 0.4", got)
	}
	if got := one(t, s, metrics.HostCPUCores, nil); got != 4 {
		t.Errorf("cores %v, want the fixture's 4", got)
	}
	if one(t, s, metrics.HostDiskTotalBytes, map[string]string{"area": "root"}) <= 0 {
		t.Error("no size for the root's filesystem")
	}
	if one(t, s, metrics.HostDiskFreeCriticalRatio, nil) != health.DefaultThresholds().DiskFreeCriticalPercent/100 {
		t.Error("critical disk threshold is not the checker's")
	}
	if len(find(s, metrics.TreeUsedBytes, tree("a", area.Workspace))) != 1 {
		t.Error("tree series missing beside the failed collectors")
	}
}

// TestCardinality: 1,000 projects give exactly 1,000 × areas series of
// each tree metric; removing one removes its series and no other.
func TestCardinality(t *testing.T) {
	if testing.Short() {
		prereq.Missing(t, "adds 1,000 projects: run without -short")
	}
	r := fixture.New(t, "sqlite", filepath.Join(t.TempDir(), "xfsq.db"))
	names := addMany(t, r, 1000)
	url := serve(t, r, nil)
	areas := len(area.OfProject)
	perTree := map[string]int{metrics.TreeUsedBytes: 1, metrics.TreeUsedInodes: 1, metrics.QuotaExceeded: 1,
		metrics.TreeUsageAgeSeconds: 1, metrics.SweepEvictedBytesTotal: 1, metrics.DeletionsFailedTotal: 1,
		metrics.TreeLimitBytes: 2, metrics.TreeLimitInodes: 2}
	check := func(projects int) {
		t.Helper()
		s := parse(t, get(t, url))
		for name, per := range perTree {
			// The root's inbound tree is one more tree.
			if n := len(find(s, name, nil)); n != (projects*areas+1)*per {
				t.Errorf("%s: %d series, want (%d × %d areas + the inbound tree) × %d", name, n, projects, areas, per)
			}
		}
	}
	check(1000)
	if _, err := r.Manager.Remove(r.Ctx, names[500], sandbox.RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	check(999)
}

// addMany adds n projects through the library, as xfsq project add would.
func addMany(t testing.TB, r *fixture.Root, n int) []string {
	t.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = "p" + strconv.Itoa(i)
	}
	if err := addProjects(context.Background(), r.Manager, n, nil); err != nil {
		t.Fatal(err)
	}
	return slices.Clip(names)
}

// TestScrapeOfAnEmptyRoot: no project, no journal yet: a valid answer
// with the collectors' and the build's series, and the root's inbound
// tree's (project label _root, which no tenant name can be).
func TestScrapeOfAnEmptyRoot(t *testing.T) {
	r := fixture.New(t, "sqlite", filepath.Join(t.TempDir(), "xfsq.db"))
	s := parse(t, get(t, serve(t, r, nil)))
	if one(t, s, metrics.CollectorSuccess, map[string]string{"collector": "trees"}) != 1 || len(find(s, metrics.TreeUsedBytes, nil)) != 1 {
		t.Errorf("empty root: %+v", s)
	}
	inbound := tree(sandbox.RootOwner, area.Inbound)
	if one(t, s, metrics.TreeUsedBytes, inbound) <= 0 || one(t, s, metrics.TreeLimitBytes, map[string]string{"project": sandbox.RootOwner, "area": area.Inbound, "kind": "hard"}) != 10<<30 {
		t.Errorf("the inbound tree's series: used %v, hard limit %v; want its usage and default_inbound_quota (10 GiB)",
			find(s, metrics.TreeUsedBytes, inbound), find(s, metrics.TreeLimitBytes, inbound))
	}
	if one(t, s, metrics.BuildInfo, nil) != 1 {
		t.Error("no build info")
	}
}
