package metrics

import (
	"cmp"
	"compress/gzip"
	"context"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/xfsq/xfsq/health"
	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/sandbox"
)

// Histogram buckets, in seconds. A sweep runs for seconds to an hour (its
// budget); a walk of one tree from milliseconds to minutes.
var (
	sweepBuckets = []float64{0.1, 0.5, 1, 5, 15, 60, 300, 900, 1800, 3600}
	walkBuckets  = []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300}

	// journalBuckets are the ones the journal's catch-up and checkpoint
	// count in: a checkpoint in others (a binary with other buckets wrote
	// it) is not used, and the next is summed from the start.
	journalBuckets = sandbox.JournalBuckets{Walks: walkBuckets, Sweeps: sweepBuckets}
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
// themselves (docs/benchmarks.md). metrics.All, checked by the tests and by
// promtool, keeps them consistent instead.
func Handler(root *sandbox.Root, checker *health.Checker, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	static := prometheus.NewRegistry()
	static.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	c := newCollector(root, checker, log)
	textType := string(expfmt.NewFormat(expfmt.TypeTextPlain))
	// A body's buffer is kept for the next scrape: a root of 1,000
	// projects writes a few megabytes each time.
	var buffers sync.Pool
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The scrape sees the request's context: a client that goes away
		// ends the reads.
		fams, trees := c.scrape(r.Context())
		// Prometheus asks for OpenMetrics first when it may (Accept);
		// anyone else, */* included, gets the text format.
		format := expfmt.NegotiateAccept(r.Header, expfmt.FmtText, expfmt.FmtOpenMetrics_1_0_0)
		out := textWriter{om: format.FormatType() == expfmt.TypeOpenMetrics}
		encode, contentType := expfmt.MetricFamilyToText, textType
		if out.om {
			encode, contentType = openMetricsFamily, string(expfmt.NewFormat(expfmt.TypeOpenMetrics))
		}
		if b, ok := buffers.Get().(*[]byte); ok {
			out.b = (*b)[:0]
		}
		defer func() { buffers.Put(&out.b) }()
		sw := sliceWriter{&out.b}
		gathered, err := static.Gather()
		if err != nil {
			log.Warn("metrics: the Go and process collectors failed", "error", err)
		}
		for _, f := range append(gathered, fams...) {
			if _, err := encode(sw, f); err != nil {
				log.Warn("metrics: a family could not be encoded", "family", f.GetName(), "error", err)
			}
		}
		trees.write(&out)
		if out.om {
			out.b = append(out.b, "# EOF\n"...)
		}
		h := w.Header()
		h.Set("Content-Type", contentType)
		h.Add("Vary", "Accept-Encoding")
		if !acceptsGzip(r) {
			h.Set("Content-Length", strconv.Itoa(len(out.b)))
			w.Write(out.b)
			return
		}
		h.Set("Content-Encoding", "gzip")
		gz := gzipWriters.Get().(*gzip.Writer)
		gz.Reset(w)
		gz.Write(out.b)
		gz.Close()
		gzipWriters.Put(gz)
	})
}

func openMetricsFamily(w io.Writer, f *dto.MetricFamily) (int, error) {
	return expfmt.MetricFamilyToOpenMetrics(w, f)
}

// Gzip at its fastest: Prometheus asks for it, and a body of 1,000
// projects is a few megabytes that compress tenfold.
var gzipWriters = sync.Pool{New: func() any {
	gz, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return gz
}}

// acceptsGzip: the request's Accept-Encoding names gzip, not at q=0.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(enc) == "gzip" {
			q = strings.ReplaceAll(strings.TrimSpace(q), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

// sliceWriter appends to a byte slice: expfmt's families and the
// hand-written ones share one buffer.
type sliceWriter struct{ b *[]byte }

func (w sliceWriter) Write(p []byte) (int, error) {
	*w.b = append(*w.b, p...)
	return len(p), nil
}

type treeKey struct{ project, area string }

// histogram is a cumulative histogram kept between scrapes.
//
// Its sum is kept in nanoseconds, as the durations it counts are: a sum
// that does not depend on the order of the observations, so that totals
// the database made (ReadJournal's catch-up) and observations one by one
// give the same figure.
type histogram struct {
	bounds []float64
	counts []uint64 // per bound, not cumulative
	count  uint64
	sum    time.Duration
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds))}
}

func (h *histogram) observe(d time.Duration) {
	h.count++
	h.sum += d
	v := d.Seconds()
	for i, b := range h.bounds {
		if v <= b {
			h.counts[i]++
			return
		}
	}
}

// addTotals adds count observations summing sum, atMost[i] of them at
// most bounds[i] (cumulative, as the store's totals give them).
func (h *histogram) addTotals(count uint64, sum time.Duration, atMost []uint64) {
	h.count += count
	h.sum += sum
	var below uint64
	for i := range h.bounds {
		h.counts[i] += atMost[i] - below
		below = atMost[i]
	}
}

// metric is h as of now, its own copy: the next scrape may observe more.
func (h *histogram) metric() *dto.Histogram {
	out := &dto.Histogram{SampleCount: ptr(h.count), SampleSum: ptr(h.sum.Seconds()), Bucket: make([]*dto.Bucket, len(h.bounds))}
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
	root    *sandbox.Root
	checker *health.Checker
	log     *slog.Logger
	build   []string

	// reading: one journal read at a time (and the cursor); a scrape
	// that finds one under way does not wait for it (readJournal).
	reading sync.Mutex
	cursor  sandbox.JournalCursor

	mu       sync.Mutex // guards the fields below
	evicted  map[treeKey]float64
	failed   map[treeKey]float64
	sweeps   *histogram
	walks    map[treeKey]*histogram
	lastPass time.Time
}

func newCollector(root *sandbox.Root, checker *health.Checker, log *slog.Logger) *collector {
	c := &collector{root: root, checker: checker, log: log,
		evicted: map[treeKey]float64{}, failed: map[treeKey]float64{}, walks: map[treeKey]*histogram{},
		sweeps: newHistogram(sweepBuckets), build: []string{"unknown", "unknown"},
		cursor: sandbox.JournalCursor{Buckets: journalBuckets}} // the first scrape sums what it catches up on in the database
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

func (f families) list() []*dto.MetricFamily {
	out := make([]*dto.MetricFamily, 0, len(f))
	for _, m := range All {
		if fam := f[m.Name]; fam != nil && len(fam.Metric) > 0 { // an empty family is not valid exposition
			out = append(out, fam)
		}
	}
	return out
}

// treeSeries is one scrape's per-tree figures, written by hand
// (textWriter): the trees in project and area order, and beside each its
// journal totals and walk histogram as of this scrape.
type treeSeries struct {
	trees           []sandbox.TreeStatus
	labels          []string // each tree's, as treeLabels spells them
	now             time.Time
	xfs             bool
	evicted, failed []float64
	walks           []*histogram // nil: the tree has no walk on record
	fullAt          map[sandbox.TreeKey]time.Time
}

// perTree are the families treeSeries writes, in All's order.
var perTree = func() []Metric {
	var out []Metric
	for _, m := range All {
		if len(m.Labels) >= 2 && m.Labels[0] == LabelProject && m.Labels[1] == LabelArea {
			out = append(out, m)
		}
	}
	return out
}()

func (s *treeSeries) write(w *textWriter) {
	if len(s.trees) == 0 {
		return // an empty family is not valid exposition
	}
	s.labels = make([]string, len(s.trees))
	for i := range s.trees {
		s.labels[i] = treeLabels(s.trees[i].Project, s.trees[i].Area)
	}
	for _, m := range perTree {
		if m.Name == WalkDurationSeconds {
			s.writeWalks(w, m)
			continue
		}
		if m.Name == TreeFullInSeconds && len(s.fullAt) == 0 {
			continue // an empty family is not valid exposition
		}
		if m.Name == TreeUsageAgeSeconds && !s.xfs && !slices.ContainsFunc(s.trees, func(t sandbox.TreeStatus) bool { return t.UsageWalkedAt != nil }) {
			continue
		}
		w.header(m)
		for i := range s.trees {
			t, l := &s.trees[i], s.labels[i]
			switch m.Name {
			case TreeUsedBytes:
				w.treeSample(m.Name, "", l, "", float64(t.UsedBytes))
			case TreeUsedInodes:
				w.treeSample(m.Name, "", l, "", float64(t.UsedInodes))
			case TreeLimitBytes:
				w.treeSample(m.Name, "", l, kindSoftLabel, float64(t.BytesSoft))
				w.treeSample(m.Name, "", l, kindHardLabel, float64(t.BytesHard))
			case TreeLimitInodes:
				w.treeSample(m.Name, "", l, kindSoftLabel, float64(t.InodesSoft))
				w.treeSample(m.Name, "", l, kindHardLabel, float64(t.InodesHard))
			case QuotaExceeded:
				v := 0.0
				if sandbox.Exceeded(*t, s.now) {
					v = 1
				}
				w.treeSample(m.Name, "", l, "", v)
			case TreeFullInSeconds:
				if at, ok := s.fullAt[sandbox.TreeKey{Project: t.Project, Area: t.Area}]; ok {
					w.treeSample(m.Name, "", l, "", max(0, at.Sub(s.now).Seconds()))
				}
			case TreeUsageAgeSeconds:
				switch {
				case s.xfs:
					w.treeSample(m.Name, "", l, "", 0)
				case t.UsageWalkedAt != nil:
					w.treeSample(m.Name, "", l, "", max(0, s.now.Sub(*t.UsageWalkedAt).Seconds()))
				}
			case SweepEvictedBytesTotal:
				w.treeSample(m.Name, "", l, "", s.evicted[i])
			case DeletionsFailedTotal:
				w.treeSample(m.Name, "", l, "", s.failed[i])
			default:
				panic("metrics: no per-tree writer for " + m.Name) // a programming error, caught by every test
			}
		}
	}
}

func (s *treeSeries) writeWalks(w *textWriter, m Metric) {
	if !slices.ContainsFunc(s.walks, func(h *histogram) bool { return h != nil }) {
		return
	}
	w.header(m)
	var le []byte
	for i, h := range s.walks {
		if h == nil {
			continue
		}
		l := s.labels[i]
		var cum uint64
		for j, bound := range h.bounds {
			cum += h.counts[j]
			le = append(appendValue(append(le[:0], `,le="`...), bound), '"')
			w.treeSample(m.Name, "_bucket", l, string(le), float64(cum))
		}
		w.treeSample(m.Name, "_bucket", l, `,le="+Inf"`, float64(h.count))
		w.treeSample(m.Name, "_sum", l, "", h.sum.Seconds())
		w.treeSample(m.Name, "_count", l, "", float64(h.count))
	}
}

const (
	kindSoftLabel = `,kind="soft"`
	kindHardLabel = `,kind="hard"`
)

// copy is h as of now, its own: the next scrape may observe more.
func (h *histogram) copy() *histogram {
	c := *h
	c.counts = slices.Clone(h.counts)
	return &c
}

// scrape reads everything once and returns xfsq's series.
func (c *collector) scrape(ctx context.Context) ([]*dto.MetricFamily, *treeSeries) {
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
	slices.SortFunc(trees, func(a, b sandbox.TreeStatus) int {
		return cmp.Or(strings.Compare(a.Project, b.Project), strings.Compare(a.Area, b.Area))
	})
	ts := &treeSeries{trees: trees, now: time.Now(), xfs: c.root.Manager.IsXFS(), fullAt: c.root.Manager.FullAt(ctx),
		evicted: make([]float64, len(trees)), failed: make([]float64, len(trees)), walks: make([]*histogram, len(trees))}

	err = c.readJournal(ctx)
	success("journal", err == nil)
	if err != nil {
		c.log.Warn("metrics: reading the journal failed", "error", err)
	}
	c.mu.Lock()
	// Counters of trees that exist now only: a removed project's series
	// go with it (its totals are kept, should it come back).
	for i := range trees {
		k := treeKey{trees[i].Project, trees[i].Area}
		ts.evicted[i], ts.failed[i] = c.evicted[k], c.failed[k]
		if h := c.walks[k]; h != nil {
			ts.walks[i] = h.copy()
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
	return f.list(), ts
}

// readJournal adds what the journal gained since the last scrape.
//
// A scrape that finds another reading it shows the counters as they are
// and leaves the rest to the next scrape: waiting for the read, which may
// wait on a stalled store for its request's budget, made a burst of
// scrapes (anyone may send them) each wait out all those before it.
func (c *collector) readJournal(ctx context.Context) error {
	if !c.reading.TryLock() {
		return nil
	}
	defer c.reading.Unlock()
	news, err := c.root.Manager.ReadJournal(ctx, &c.cursor)
	c.count(news)
	return err
}

// CheckpointJournal keeps root's journal checkpoint in the buckets the
// collector counts in (Manager.CheckpointJournal), so that a restarted
// server's first scrape sums only the records since: for what runs beside
// the server every few minutes (daemon.JournalCheckpoints), never at a
// scrape, which only reads.
func CheckpointJournal(ctx context.Context, root *sandbox.Root) (bool, error) {
	return root.Manager.CheckpointJournal(ctx, journalBuckets)
}

// count adds news to the counters.
func (c *collector) count(news sandbox.JournalNews) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range news.Deletions {
		k := treeKey{d.Project, d.Area}
		switch {
		case d.State == deletion.StateFailed:
			c.failed[k]++
		case d.BySweep:
			c.evicted[k] += float64(d.Bytes)
		}
	}
	for _, d := range news.DeletionTotals {
		k := treeKey{d.Project, d.Area}
		if d.Failed > 0 {
			c.failed[k] += float64(d.Failed)
		}
		if d.Swept > 0 {
			c.evicted[k] += float64(d.SweptBytes)
		}
	}
	for _, w := range news.WalkTotals {
		k := treeKey{w.Project, w.Area}
		if c.walks[k] == nil {
			c.walks[k] = newHistogram(walkBuckets)
		}
		c.walks[k].addTotals(w.Count, w.Sum, w.AtMost)
	}
	if t := news.SweepTotals; t.Count > 0 {
		c.sweeps.addTotals(t.Count, t.Sum, t.AtMost)
	}
	for _, s := range news.Sweeps {
		c.sweeps.observe(s.Duration)
	}
	for _, w := range news.Walks {
		k := treeKey{w.Project, w.Area}
		if c.walks[k] == nil {
			c.walks[k] = newHistogram(walkBuckets)
		}
		c.walks[k].observe(w.Duration)
	}
	for _, p := range news.SnapshotPasses {
		if p.After(c.lastPass) {
			c.lastPass = p
		}
	}
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
