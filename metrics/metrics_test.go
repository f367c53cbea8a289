package metrics

import (
	"regexp"
	"strings"
	"testing"
)

// TestNames: every metric has a Prometheus name, help, and only bounded
// labels; counters end in _total and durations in _seconds, as the
// exposition conventions say.
func TestNames(t *testing.T) {
	name := regexp.MustCompile(`^xfsq_[a-z0-9_]+$`)
	bounded := map[string]bool{LabelProject: true, LabelArea: true, LabelKind: true, LabelCollector: true, LabelVersion: true, LabelGoVersion: true}
	seen := map[string]bool{}
	for _, m := range All {
		if !name.MatchString(m.Name) || m.Help == "" || seen[m.Name] {
			t.Errorf("%+v", m)
		}
		seen[m.Name] = true
		if (m.Type == typeCounter) != strings.HasSuffix(m.Name, "_total") {
			t.Errorf("%s: a %s", m.Name, m.Type)
		}
		if strings.Contains(m.Name, "duration") && !strings.HasSuffix(m.Name, "_seconds") {
			t.Errorf("%s: a duration not in seconds", m.Name)
		}
		for _, l := range m.Labels {
			if !bounded[l] {
				t.Errorf("%s: unbounded label %q", m.Name, l)
			}
		}
	}
	for _, n := range []string{TreeUsedBytes, TreeLimitBytes, TreeUsedInodes, TreeLimitInodes, SweepEvictedBytesTotal,
		SweepDurationSeconds, WalkDurationSeconds, QuotaExceeded, TreeUsageAgeSeconds, CollectorSuccess, BuildInfo} {
		if !seen[n] {
			t.Errorf("%s, named by docs/operations.md#metrics-alerts-and-grafana or issue 19, is not in All", n)
		}
	}
}
