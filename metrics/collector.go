package metrics

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/xfsq/xfsq/health"
	"github.com/xfsq/xfsq/project"
	"github.com/xfsq/xfsq/sweep"
)

// Histogram buckets, in seconds. A sweep runs for seconds to an hour (its
// budget); a walk of one tree from milliseconds to minutes.
var (
	sweepBuckets = []float64{0.1, 0.5, 1, 5, 15, 60, 300, 900, 1800, 3600}
	walkBuckets  = []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300}
)

// Handler serves the metrics of root (and of the host, when checker is not
// nil) in the Prometheus exposition format, with the Go and process
// collectors. Each request reads afresh within the request's context; a
// part that fails is logged to log, shows as xfsq_collector_success 0 and
// leaves the other parts' series in place. The journal counters are kept
// by the handler between scrapes: keep one Handler per process.
//
// xfsq's own series are built per scrape as metric families (the
// exposition's data model) rather than through prometheus.Collector: a
// root of 2,000 trees has about 25,000 series, and the registry's checking,
// sorting and copying of each const metric cost several times the reads
// themselves (BENCHMARKS.md). metrics.All, checked by the tests and by
// promtool, keeps them consistent instead.
func Handler(root *project.Root, checker *health.Checker, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	static := prometheus.NewRegistry()
	static.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	c := newCollector(root, checker, log)
	opts := promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, ErrorLog: slogPrinter{log}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The gatherer sees the request's context: a client that goes
		// away ends the reads.
		g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
			out, err := static.Gather()
			return append(out, c.scrape(r.Context())...), err
		})
		promhttp.HandlerFor(g, opts).ServeHTTP(w, r)
	})
}

type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) { p.log.Warn("metrics", "error", fmt.Sprint(v...)) }

type treeKey struct{ project, area string }

// histogram is a cumulative histogram kept between scrapes.
type histogram struct {
	bounds []float64
	counts []uint64 // per bound, not cumulative
	count  uint64
	sum    float64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds))}
}

func (h *histogram) observe(v float64) {
	h.count++
	h.sum += v
	for i, b := range h.bounds {
		if v <= b {
			h.counts[i]++
			return
		}
	}
}

// metric is h as of now, its own copy: the next scrape may observe more.
func (h *histogram) metric() *dto.Histogram {
	out := &dto.Histogram{SampleCount: ptr(h.count), SampleSum: ptr(h.sum), Bucket: make([]*dto.Bucket, len(h.bounds))}
	var cum uint64
	for i := range h.bounds {
		cum += h.counts[i]
		out.Bucket[i] = &dto.Bucket{UpperBound: &h.bounds[i], CumulativeCount: ptr(cum)}
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// collector holds what outlives a scrape: the journal cursor and the
// totals read through it.
type collector struct {
	root    *project.Root
	checker *health.Checker
	log     *slog.Logger
	build   []string

	mu       sync.Mutex // one journal read at a time; guards the fields below
	cursor   project.JournalCursor
	evicted  map[treeKey]float64
	failed   map[treeKey]float64
	sweeps   *histogram
	walks    map[treeKey]*histogram
	lastPass time.Time
}

func newCollector(root *project.Root, checker *health.Checker, log *slog.Logger) *collector {
	c := &collector{root: root, checker: checker, log: log,
		evicted: map[treeKey]float64{}, failed: map[treeKey]float64{}, walks: map[treeKey]*histogram{},
		sweeps: newHistogram(sweepBuckets), build: []string{"unknown", "unknown"}}
	if bi, ok := debug.ReadBuildInfo(); ok {
		c.build = []string{bi.Main.Version, bi.GoVersion}
	}
	return c
}

var meta = func() map[string]Metric {
	m := map[string]Metric{}
	for _, x := range All {
		m[x.Name] = x
	}
	return m
}()

var typeOf = map[string]dto.MetricType{typeGauge: dto.MetricType_GAUGE, typeCounter: dto.MetricType_COUNTER, typeHistogram: dto.MetricType_HISTOGRAM}

// families collects one scrape's series by family, in All's order.
type families map[string]*dto.MetricFamily

func (f families) add(name string, m *dto.Metric) {
	fam := f[name]
	if fam == nil {
		md, ok := meta[name]
		if !ok {
			panic("metrics: " + name + " is not in All") // a programming error, caught by every test
		}
		fam = &dto.MetricFamily{Name: &md.Name, Help: &md.Help, Type: typeOf[md.Type].Enum()}
		f[name] = fam
	}
	if m != nil {
		fam.Metric = append(fam.Metric, m)
	}
}

func labels(names []string, values ...string) []*dto.LabelPair {
	out := make([]*dto.LabelPair, len(values))
	for i := range values {
		out[i] = &dto.LabelPair{Name: &names[i], Value: &values[i]}
	}
	return out
}

func (f families) gauge(name string, v float64, l []*dto.LabelPair) {
	f.add(name, &dto.Metric{Label: l, Gauge: &dto.Gauge{Value: &v}})
}

func (f families) counter(name string, v float64, l []*dto.LabelPair) {
	f.add(name, &dto.Metric{Label: l, Counter: &dto.Counter{Value: &v}})
}

func (f families) list() []*dto.MetricFamily {
	out := make([]*dto.MetricFamily, 0, len(f))
	for _, m := range All {
		if fam := f[m.Name]; fam != nil && len(fam.Metric) > 0 { // an empty family is not valid exposition
			out = append(out, fam)
		}
	}
	return out
}

// grow makes room in the per-tree families for n trees.
func (f families) grow(n int) {
	for _, m := range All {
		if len(m.Labels) >= 2 && m.Labels[0] == LabelProject && m.Labels[1] == LabelArea {
			f.add(m.Name, nil)
			per := 1
			if len(m.Labels) == 3 { // kind: soft and hard
				per = 2
			}
			f[m.Name].Metric = make([]*dto.Metric, 0, per*n)
		}
	}
}

// A tree's label pairs and the series that use them, allocated together.
type treeBlock struct {
	project, area string
	pairs         [2]dto.LabelPair
	tree          [2]*dto.LabelPair
	soft, hard    [3]*dto.LabelPair
	gauges        [8]dto.Metric
	gaugeValues   [8]dto.Gauge
	counters      [2]dto.Metric
	counterValues [2]dto.Counter
	gaugeFloats   [8]float64
	counterFloats [2]float64
}

var (
	kindSoft = &dto.LabelPair{Name: ptr(LabelKind), Value: ptr("soft")}
	kindHard = &dto.LabelPair{Name: ptr(LabelKind), Value: ptr("hard")}
)

func (b *treeBlock) init(project, area string) {
	b.project, b.area = project, area
	b.pairs[0].Name, b.pairs[0].Value = &tree[0], &b.project
	b.pairs[1].Name, b.pairs[1].Value = &tree[1], &b.area
	b.tree = [2]*dto.LabelPair{&b.pairs[0], &b.pairs[1]}
	b.soft = [3]*dto.LabelPair{&b.pairs[0], &b.pairs[1], kindSoft}
	b.hard = [3]*dto.LabelPair{&b.pairs[0], &b.pairs[1], kindHard}
}

func (b *treeBlock) gauge(i int, v float64, l []*dto.LabelPair) *dto.Metric {
	b.gaugeFloats[i] = v
	b.gaugeValues[i].Value = &b.gaugeFloats[i]
	m := &b.gauges[i]
	m.Label, m.Gauge = l, &b.gaugeValues[i]
	return m
}

func (b *treeBlock) counter(i int, v float64) *dto.Metric {
	b.counterFloats[i] = v
	b.counterValues[i].Value = &b.counterFloats[i]
	m := &b.counters[i]
	m.Label, m.Counter = b.tree[:], &b.counterValues[i]
	return m
}

// scrape reads everything once and returns xfsq's series.
func (c *collector) scrape(ctx context.Context) []*dto.MetricFamily {
	f := families{}
	success := func(name string, ok bool) {
		v := 0.0
		if ok {
			v = 1
		}
		f.gauge(CollectorSuccess, v, labels(meta[CollectorSuccess].Labels, name))
	}
	f.gauge(BuildInfo, 1, labels(meta[BuildInfo].Labels, c.build...))

	// The host concurrently: its parts have their own budgets, and the
	// library's reads need not wait for them.
	var report *health.Report
	done := make(chan struct{})
	if c.checker != nil {
		go func() {
			r := c.checker.Collect(ctx)
			report = &r
			close(done)
		}()
	} else {
		close(done)
	}

	trees, err := c.root.Manager.Usage(ctx)
	success("trees", err == nil)
	if err != nil {
		c.log.Warn("metrics: reading the trees' usage failed", "error", err)
	}
	slices.SortFunc(trees, func(a, b project.TreeStatus) int {
		return cmp.Or(strings.Compare(a.Project, b.Project), strings.Compare(a.Area, b.Area))
	})
	now := time.Now()
	xfs := c.root.Manager.IsXFS()
	// One block per tree holds all its series: about 20,000 series on a
	// root of 2,000 trees cost two allocations a tree instead of five a
	// series.
	blocks := make([]treeBlock, len(trees))
	f.grow(len(trees))
	for i := range trees {
		t, b := &trees[i], &blocks[i]
		b.init(t.Project, t.Area)
		f.add(TreeUsedBytes, b.gauge(0, float64(t.UsedBytes), b.tree[:]))
		f.add(TreeUsedInodes, b.gauge(1, float64(t.UsedInodes), b.tree[:]))
		f.add(TreeLimitBytes, b.gauge(2, float64(t.BytesSoft), b.soft[:]))
		f.add(TreeLimitBytes, b.gauge(3, float64(t.BytesHard), b.hard[:]))
		f.add(TreeLimitInodes, b.gauge(4, float64(t.InodesSoft), b.soft[:]))
		f.add(TreeLimitInodes, b.gauge(5, float64(t.InodesHard), b.hard[:]))
		exceeded := 0.0
		if project.Exceeded(*t, now) {
			exceeded = 1
		}
		f.add(QuotaExceeded, b.gauge(6, exceeded, b.tree[:]))
		switch {
		case xfs:
			f.add(TreeUsageAgeSeconds, b.gauge(7, 0, b.tree[:]))
		case t.UsageAsOf != nil:
			f.add(TreeUsageAgeSeconds, b.gauge(7, max(0, now.Sub(*t.UsageAsOf).Seconds()), b.tree[:]))
		}
	}

	c.mu.Lock()
	err = c.readJournal(ctx)
	success("journal", err == nil)
	if err != nil {
		c.log.Warn("metrics: reading the journal failed", "error", err)
	}
	// Counters of trees that exist now only: a removed project's series
	// go with it (its totals are kept, should it come back).
	for i := range trees {
		t, b := &trees[i], &blocks[i]
		k := treeKey{t.Project, t.Area}
		f.add(SweepEvictedBytesTotal, b.counter(0, c.evicted[k]))
		f.add(DeletionsFailedTotal, b.counter(1, c.failed[k]))
		if h := c.walks[k]; h != nil {
			f.add(WalkDurationSeconds, &dto.Metric{Label: b.tree[:], Histogram: h.metric()})
		}
	}
	f.add(SweepDurationSeconds, &dto.Metric{Histogram: c.sweeps.metric()})
	if !c.lastPass.IsZero() {
		f.gauge(SnapshotLastPass, float64(c.lastPass.UnixMilli())/1000, nil)
	}
	c.mu.Unlock()

	<-done
	if report != nil {
		c.host(*report, f, success)
	}
	return f.list()
}

// readJournal adds what the journal gained since the last scrape.
func (c *collector) readJournal(ctx context.Context) error {
	news, err := c.root.Manager.ReadJournal(ctx, &c.cursor)
	for _, d := range news.Deletions {
		k := treeKey{d.Project, d.Area}
		switch {
		case d.State == sweep.StateFailed:
			c.failed[k]++
		case d.BySweep:
			c.evicted[k] += float64(d.Bytes)
		}
	}
	for _, s := range news.Sweeps {
		c.sweeps.observe(s.Duration.Seconds())
	}
	for _, w := range news.Walks {
		k := treeKey{w.Project, w.Area}
		if c.walks[k] == nil {
			c.walks[k] = newHistogram(walkBuckets)
		}
		c.walks[k].observe(w.Duration.Seconds())
	}
	for _, p := range news.SnapshotPasses {
		if p.After(c.lastPass) {
			c.lastPass = p
		}
	}
	return err
}

// host exports the health answer's figures; a part in error exports none.
func (c *collector) host(r health.Report, f families, success func(string, bool)) {
	emit := func(name string, v float64, area ...string) { f.gauge(name, v, labels(diskArea, area...)) }
	ok := func(p *health.Part) bool { return p != nil && p.Status != health.Error }
	th := c.checker.Thresholds()
	emit(HostDiskFreeWarnRatio, th.DiskFreeWarnPercent/100)
	emit(HostDiskFreeCriticalRatio, th.DiskFreeCriticalPercent/100)
	if r.Disk != nil {
		success("disk", ok(&r.Disk.Part))
		for _, p := range r.Disk.Paths {
			// An area base on the root's filesystem would repeat its figures.
			if p.Error != "" || p.SameFilesystemAsRoot {
				continue
			}
			area := p.Area
			if area == "" {
				area = "root"
			}
			emit(HostDiskTotalBytes, float64(p.TotalBytes), area)
			emit(HostDiskFreeBytes, float64(p.FreeBytes), area)
			emit(HostDiskAvailableBytes, float64(p.AvailableBytes), area)
			emit(HostDiskTotalInodes, float64(p.TotalInodes), area)
			emit(HostDiskFreeInodes, float64(p.FreeInodes), area)
		}
	}
	if p := r.CPU; p != nil {
		success("cpu", ok(&p.Part))
		if ok(&p.Part) {
			emit(HostLoad1, p.Load1)
			emit(HostLoad5, p.Load5)
			emit(HostLoad15, p.Load15)
			emit(HostCPUCores, float64(p.Cores))
			if p.BusyPercent != nil {
				emit(HostCPUBusyRatio, *p.BusyPercent/100)
			}
		}
	}
	if p := r.Memory; p != nil {
		success("memory", ok(&p.Part))
		if ok(&p.Part) {
			emit(HostMemoryTotalBytes, float64(p.TotalBytes))
			emit(HostMemoryAvailableBytes, float64(p.AvailableBytes))
			emit(HostSwapTotalBytes, float64(p.SwapTotalBytes))
			emit(HostSwapFreeBytes, float64(p.SwapFreeBytes))
		}
	}
	if p := r.Docker; p != nil {
		success("docker", ok(&p.Part))
		if ok(&p.Part) {
			emit(DockerContainersRunning, float64(p.ContainersRunning))
			emit(DockerContainers, float64(p.ContainersTotal))
			emit(DockerImages, float64(p.Images))
			emit(DockerImagesBytes, float64(p.ImagesBytes))
			emit(DockerContainersBytes, float64(p.ContainersBytes))
			emit(DockerBuildCacheBytes, float64(p.BuildCacheBytes))
			emit(DockerVolumesBytes, float64(p.VolumesBytes))
		}
	}
	if p := r.Quota; p != nil {
		success("quota", ok(&p.Part))
		if ok(&p.Part) {
			v := 0.0
			if p.Backend.Enforced {
				v = 1
			}
			emit(HostQuotaEnforced, v)
		}
	}
	if p := r.Store; p != nil {
		success("store", ok(&p.Part))
		if ok(&p.Part) {
			emit(HostStoreLatencySeconds, p.LatencySeconds)
		}
	}
}
