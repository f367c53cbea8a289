package metrics

import (
	"bytes"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/sandbox"
)

// The hand-written per-tree series read back, through Prometheus's own
// text parser, as exactly the values and label values written: names a
// tenant could never register (quotes, backslashes, newlines) and values
// expfmt would spell specially included.
func TestTreeSeriesReadBackThroughPrometheusParser(t *testing.T) {
	walked := time.Now().Add(-90 * time.Second)
	h := newHistogram(walkBuckets)
	h.observe(200 * time.Millisecond)
	h.observe(7 * time.Second)
	cases := []struct {
		project string
		used    uint64
		evicted float64
	}{
		{"plain", 0, 0},
		{`quo"te`, 1 << 60, 1.5},
		{`back\slash`, 12345, math.Inf(1)},
		{"new\nline", math.MaxUint64, math.NaN()},
	}
	s := &treeSeries{now: time.Now(), fullAt: map[sandbox.TreeKey]time.Time{}}
	for _, c := range cases {
		s.fullAt[sandbox.TreeKey{Project: c.project, Area: area.Workspace}] = s.now.Add(time.Hour)
		s.trees = append(s.trees, sandbox.TreeStatus{Project: c.project, Area: area.Workspace, UsedBytes: c.used,
			BytesHard: 1 << 30, UsageWalkedAt: &walked})
		s.evicted = append(s.evicted, c.evicted)
		s.failed = append(s.failed, 2)
		s.walks = append(s.walks, h)
	}
	var w textWriter
	s.write(&w)
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(w.b))
	if err != nil {
		t.Fatalf("Prometheus's parser refuses the output: %v\n%s", err, w.b)
	}
	for _, m := range perTree {
		if fams[m.Name] == nil {
			t.Errorf("family %s missing", m.Name)
		} else if got := strings.ToLower(fams[m.Name].GetType().String()); got != m.Type {
			t.Errorf("%s is a %s, want a %s", m.Name, got, m.Type)
		}
	}
	value := func(name, proj string, kind string) float64 {
		t.Helper()
		for _, mt := range fams[name].GetMetric() {
			labels := map[string]string{}
			for _, l := range mt.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["project"] == proj && labels["area"] == area.Workspace && labels["kind"] == kind {
				switch {
				case mt.Gauge != nil:
					return mt.GetGauge().GetValue()
				case mt.Counter != nil:
					return mt.GetCounter().GetValue()
				}
			}
		}
		t.Fatalf("%s{project=%q}: no series", name, proj)
		return 0
	}
	for _, c := range cases {
		if got := value(TreeUsedBytes, c.project, ""); got != float64(c.used) {
			t.Errorf("used bytes of %q read back as %v, want %v", c.project, got, float64(c.used))
		}
		if got := value(SweepEvictedBytesTotal, c.project, ""); got != c.evicted && !(math.IsNaN(got) && math.IsNaN(c.evicted)) {
			t.Errorf("evicted of %q read back as %v, want %v", c.project, got, c.evicted)
		}
		if got := value(TreeLimitBytes, c.project, "hard"); got != 1<<30 {
			t.Errorf("hard limit of %q read back as %v", c.project, got)
		}
		if got := value(TreeUsageAgeSeconds, c.project, ""); got < 90 || got > 120 {
			t.Errorf("usage age of %q read back as %v, want about 90", c.project, got)
		}
	}
	hist := fams[WalkDurationSeconds].GetMetric()[0].GetHistogram()
	if hist.GetSampleCount() != 2 || hist.GetSampleSum() != 7.2 || len(hist.GetBucket()) != len(walkBuckets)+1 ||
		hist.GetBucket()[3].GetCumulativeCount() != 1 || hist.GetBucket()[3].GetUpperBound() != 0.5 ||
		!math.IsInf(hist.GetBucket()[len(walkBuckets)].GetUpperBound(), 1) || hist.GetBucket()[len(walkBuckets)].GetCumulativeCount() != 2 {
		t.Errorf("walk histogram read back as %v", hist)
	}
	for name := range fams {
		if !model.LegacyValidation.IsValidMetricName(name) {
			t.Errorf("family name %q is not a valid metric name", name)
		}
	}
}

func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"":                        false,
		"gzip":                    true,
		"identity":                false,
		"deflate, gzip;q=0.5":     true,
		"gzip;q=0, identity":      false,
		"br, gzip ; q=0.000":      false,
		"x-gzip":                  false,
		"zstd,gzip,deflate":       true,
		"gzip;q=1.0":              true,
		"identity;q=1, *;q=0.001": false,
	} {
		r, _ := http.NewRequest("GET", "/metrics", nil)
		r.Header.Set("Accept-Encoding", header)
		if got := acceptsGzip(r); got != want {
			t.Errorf("Accept-Encoding %q: gzip %v, want %v", header, got, want)
		}
	}
}
