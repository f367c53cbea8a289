package sandbox_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/sandbox"
)

// BenchmarkSweepDryRun is `xfsq sweep --all --dry-run` in process on a
// fallback root of N projects with nothing to delete: the planning a
// scheduled sweep pass does for every project each round. Its cost per
// project (ns/project) must not grow with the root: a pass that summed the
// whole root for each of its trees was quadratic (docs/benchmarks.md).
//
//	go test ./project -run '^$' -bench SweepDryRun -count 5
func BenchmarkSweepDryRun(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("%d-projects", n), func(b *testing.B) {
			r := fixture.New(b, "sqlite", filepath.Join(b.TempDir(), "xfsq.db"))
			for i := range n {
				r.Add(1<<30, fmt.Sprintf("p%04d", i))
			}
			for b.Loop() {
				if _, err := r.Manager.Sweep(r.Ctx, sandbox.SweepOptions{DryRun: true}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/project")
		})
	}
}
