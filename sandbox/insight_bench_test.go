package sandbox_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/cputime"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// benchTree is a stored tree of 1+16+256+4,096 = 4,369 directories (the
// size of the default walk's kept tree), each size scaled by grow.
func benchTree(grow uint64) *inventory.Node {
	var mk func(path string, depth int) *inventory.Node
	mk = func(path string, depth int) *inventory.Node {
		n := &inventory.Node{Path: path, SizeBytes: 4096 * grow, Mtime: time.Unix(1_700_000_000, 0)}
		if depth < 3 {
			for i := range 16 {
				child := fmt.Sprintf("d%02d", i)
				if path != "." {
					child = path + "/" + child
				}
				c := mk(child, depth+1)
				n.Children = append(n.Children, c)
				n.SizeBytes += c.SizeBytes
			}
		}
		return n
	}
	return mk(".", 0)
}

// benchRoot is a root whose one project has 35 days of hourly snapshots
// of each tree (snapshot_retention's default), the workspace's with its
// kept trees (every store.HistoryEvery, 8 days).
func benchRoot(b *testing.B) *fixture.Root {
	r := fixture.New(b, "sqlite", filepath.Join(b.TempDir(), "xfsq.db"))
	r.Add(1<<40, "omni")
	now := time.Now()
	err := sandbox.TestStore(r.Manager).InTx(r.Ctx, func(tx *store.Tx) error {
		for h := 35 * 24; h >= 1; h-- {
			for _, a := range []string{"workspace", "cache", "scratch"} {
				tree := []byte{}
				if a == "workspace" && h <= 8*24 { // kept every store.HistoryEvery of these
					tree = inventory.AppendStored(nil, benchTree(uint64(1+(35*24-h)/24)), nil)
				}
				s := store.Snapshot{Project: "omni", Area: a, At: now.Add(-time.Duration(h) * time.Hour), SizeBytes: uint64(35*24-h) << 20, KernelBytes: -1}
				if err := tx.AddSnapshot(r.Ctx, s, tree, 35*24*time.Hour); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkProjectFullIn is the full-in of one project's trees from 35
// days of stored snapshots (what report, the overview and the metrics
// fit per project). Target: ≤ 20 ms (docs/benchmarks.md).
//
//	go test ./sandbox -run '^$' -bench 'ProjectFullIn|ProjectDiff' -count 5
func BenchmarkProjectFullIn(b *testing.B) {
	r := benchRoot(b)
	cpu := cputime.Now()
	for b.Loop() {
		if _, err := r.Manager.ProjectTrends(r.Ctx, "omni"); err != nil {
			b.Fatal(err)
		}
	}
	cputime.Report(b, cpu)
}

// BenchmarkProjectDiff is xfsq diff of a workspace of 4,369 directories,
// now against a day before, from the stored snapshots. Target: ≤ 20 ms.
func BenchmarkProjectDiff(b *testing.B) {
	r := benchRoot(b)
	cpu := cputime.Now()
	for b.Loop() {
		d, err := r.Manager.Diff(r.Ctx, "omni", sandbox.DiffOptions{})
		if err != nil || len(d.Grew) == 0 {
			b.Fatal(d, err)
		}
	}
	cputime.Report(b, cpu)
}
