package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

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
func Handler(root *project.Root, checker *health.Checker, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	static := prometheus.NewRegistry()
	static.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	c := newCollector(root, checker, log)
	opts := promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, ErrorLog: slogPrinter{log}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// One registry per scrape, so that the collector sees the
		// request's context (a client that goes away ends the reads).
		reg := prometheus.NewRegistry()
		reg.MustRegister(scrape{c, r.Context()})
		promhttp.HandlerFor(prometheus.Gatherers{static, reg}, opts).ServeHTTP(w, r)
	})
}

type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) { p.log.Warn("metrics", "error", v) }

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

func (h *histogram) buckets() map[float64]uint64 {
	out := make(map[float64]uint64, len(h.bounds))
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i]
		out[b] = cum
	}
	return out
}

// collector holds what outlives a scrape: the journal cursor and the
// totals read through it.
type collector struct {
	root    *project.Root
	checker *health.Checker
	log     *slog.Logger
	descs   map[string]*prometheus.Desc
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
	c := &collector{root: root, checker: checker, log: log, descs: map[string]*prometheus.Desc{},
		evicted: map[treeKey]float64{}, failed: map[treeKey]float64{}, walks: map[treeKey]*histogram{},
		sweeps: newHistogram(sweepBuckets), build: []string{"unknown", "unknown"}}
	for _, m := range All {
		c.descs[m.Name] = prometheus.NewDesc(m.Name, m.Help, m.Labels, nil)
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		c.build = []string{bi.Main.Version, bi.GoVersion}
	}
	return c
}

// scrape is the collector within one request's context.
type scrape struct {
	c   *collector
	ctx context.Context
}

func (s scrape) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range s.c.descs {
		ch <- d
	}
}

func (s scrape) Collect(ch chan<- prometheus.Metric) {
	c := s.c
	emit := func(name string, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], t, v, labels...)
	}
	success := func(name string, ok bool) {
		v := 0.0
		if ok {
			v = 1
		}
		emit(CollectorSuccess, prometheus.GaugeValue, v, name)
	}
	emit(BuildInfo, prometheus.GaugeValue, 1, c.build...)

	// The host first and concurrently: its parts have their own budgets,
	// and the library's reads need not wait for them.
	var report *health.Report
	done := make(chan struct{})
	if c.checker != nil {
		go func() {
			r := c.checker.Collect(s.ctx)
			report = &r
			close(done)
		}()
	} else {
		close(done)
	}

	trees, err := c.root.Manager.Usage(s.ctx)
	success("trees", err == nil)
	if err != nil {
		c.log.Warn("metrics: reading the trees' usage failed", "error", err)
	}
	now := time.Now()
	present := map[treeKey]bool{}
	for _, t := range trees {
		k := treeKey{t.Project, t.Area}
		present[k] = true
		l := []string{t.Project, t.Area}
		emit(TreeUsedBytes, prometheus.GaugeValue, float64(t.UsedBytes), l...)
		emit(TreeUsedInodes, prometheus.GaugeValue, float64(t.UsedInodes), l...)
		emit(TreeLimitBytes, prometheus.GaugeValue, float64(t.BytesSoft), t.Project, t.Area, "soft")
		emit(TreeLimitBytes, prometheus.GaugeValue, float64(t.BytesHard), t.Project, t.Area, "hard")
		emit(TreeLimitInodes, prometheus.GaugeValue, float64(t.InodesSoft), t.Project, t.Area, "soft")
		emit(TreeLimitInodes, prometheus.GaugeValue, float64(t.InodesHard), t.Project, t.Area, "hard")
		exceeded := 0.0
		if project.Exceeded(t, now) {
			exceeded = 1
		}
		emit(QuotaExceeded, prometheus.GaugeValue, exceeded, l...)
		switch {
		case c.root.Manager.IsXFS():
			emit(TreeUsageAgeSeconds, prometheus.GaugeValue, 0, l...)
		case t.UsageAsOf != nil:
			emit(TreeUsageAgeSeconds, prometheus.GaugeValue, max(0, now.Sub(*t.UsageAsOf).Seconds()), l...)
		}
	}

	c.mu.Lock()
	err = c.readJournal(s.ctx)
	success("journal", err == nil)
	if err != nil {
		c.log.Warn("metrics: reading the journal failed", "error", err)
	}
	// Counters of trees that exist now only: a removed project's series
	// go with it (its totals are kept, should it come back).
	for k := range present {
		l := []string{k.project, k.area}
		emit(SweepEvictedBytesTotal, prometheus.CounterValue, c.evicted[k], l...)
		emit(DeletionsFailedTotal, prometheus.CounterValue, c.failed[k], l...)
		if h := c.walks[k]; h != nil {
			ch <- prometheus.MustNewConstHistogram(c.descs[WalkDurationSeconds], h.count, h.sum, h.buckets(), l...)
		}
	}
	ch <- prometheus.MustNewConstHistogram(c.descs[SweepDurationSeconds], c.sweeps.count, c.sweeps.sum, c.sweeps.buckets())
	if !c.lastPass.IsZero() {
		emit(SnapshotLastPass, prometheus.GaugeValue, float64(c.lastPass.UnixMilli())/1000)
	}
	c.mu.Unlock()

	<-done
	if report != nil {
		c.host(*report, emit, success)
	}
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
func (c *collector) host(r health.Report, emit func(string, prometheus.ValueType, float64, ...string), success func(string, bool)) {
	g := prometheus.GaugeValue
	ok := func(p *health.Part) bool { return p != nil && p.Status != health.Error }
	th := c.checker.Thresholds()
	emit(HostDiskFreeWarnRatio, g, th.DiskFreeWarnPercent/100)
	emit(HostDiskFreeCriticalRatio, g, th.DiskFreeCriticalPercent/100)
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
			emit(HostDiskTotalBytes, g, float64(p.TotalBytes), area)
			emit(HostDiskFreeBytes, g, float64(p.FreeBytes), area)
			emit(HostDiskAvailableBytes, g, float64(p.AvailableBytes), area)
			emit(HostDiskTotalInodes, g, float64(p.TotalInodes), area)
			emit(HostDiskFreeInodes, g, float64(p.FreeInodes), area)
		}
	}
	if p := r.CPU; p != nil {
		success("cpu", ok(&p.Part))
		if ok(&p.Part) {
			emit(HostLoad1, g, p.Load1)
			emit(HostLoad5, g, p.Load5)
			emit(HostLoad15, g, p.Load15)
			emit(HostCPUCores, g, float64(p.Cores))
			if p.BusyPercent != nil {
				emit(HostCPUBusyRatio, g, *p.BusyPercent/100)
			}
		}
	}
	if p := r.Memory; p != nil {
		success("memory", ok(&p.Part))
		if ok(&p.Part) {
			emit(HostMemoryTotalBytes, g, float64(p.TotalBytes))
			emit(HostMemoryAvailableBytes, g, float64(p.AvailableBytes))
			emit(HostSwapTotalBytes, g, float64(p.SwapTotalBytes))
			emit(HostSwapFreeBytes, g, float64(p.SwapFreeBytes))
		}
	}
	if p := r.Docker; p != nil {
		success("docker", ok(&p.Part))
		if ok(&p.Part) {
			emit(DockerContainersRunning, g, float64(p.ContainersRunning))
			emit(DockerContainers, g, float64(p.ContainersTotal))
			emit(DockerImages, g, float64(p.Images))
			emit(DockerImagesBytes, g, float64(p.ImagesBytes))
			emit(DockerContainersBytes, g, float64(p.ContainersBytes))
			emit(DockerBuildCacheBytes, g, float64(p.BuildCacheBytes))
			emit(DockerVolumesBytes, g, float64(p.VolumesBytes))
		}
	}
	if p := r.Quota; p != nil {
		success("quota", ok(&p.Part))
		if ok(&p.Part) {
			v := 0.0
			if p.Backend.Enforced {
				v = 1
			}
			emit(HostQuotaEnforced, g, v)
		}
	}
	if p := r.Store; p != nil {
		success("store", ok(&p.Part))
		if ok(&p.Part) {
			emit(HostStoreLatencySeconds, g, p.LatencySeconds)
		}
	}
}
