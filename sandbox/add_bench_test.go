package sandbox_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/cputime"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
)

// BenchmarkAddAt is one project add (Manager.Add, SQLite fallback) on a
// root that already has 1,000 and 5,000 projects: an add must not pay for
// the projects before it (finding a free project ID compared every taken
// ID, three per project, so that the 10,000-project bench root took ~23
// minutes to add). Compare the two sizes' figures of the same run.
//
//	go test ./sandbox -run '^$' -bench AddAt -benchtime 200x
func BenchmarkAddAt(b *testing.B) {
	r := fixture.New(b, "sqlite", filepath.Join(b.TempDir(), "xfsq.db"))
	added := 0
	for _, n := range []int{1000, 5000} {
		for ; added < n; added++ {
			r.Add(1<<30, fmt.Sprintf("p%05d", added))
		}
		b.Run(fmt.Sprintf("projects=%d", n), func(b *testing.B) {
			cpu := cputime.Now()
			i := 0
			for b.Loop() {
				r.Add(1<<30, fmt.Sprintf("q%05d-%06d", n, i))
				i++
			}
			cputime.Report(b, cpu)
		})
	}
}
