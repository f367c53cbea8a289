package inventory

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkWalk compares the walker with du and with the obvious Go walk on
// the tree named by XFSQ_BENCH_TREE (make one with scripts/gentree). Run
// scripts/walk-bench.sh for the numbers in docs/benchmarks.md.
func BenchmarkWalk(b *testing.B) {
	dir := os.Getenv("XFSQ_BENCH_TREE")
	if dir == "" {
		b.Skip("set XFSQ_BENCH_TREE to a tree made by scripts/gentree (see docs/benchmarks.md)")
	}
	exec.Command("du", "-s", dir).Run() // warm the caches
	b.Run("xfsq-depth3-top20", func(b *testing.B) {
		for b.Loop() {
			if _, err := Walk(dir, Options{Depth: 3, TopK: 20, RawStat: true}); err != nil { // as xfsq snapshot walks
				b.Fatal(err)
			}
		}
	})
	b.Run("du-s", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("du", "-s", dir).Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("go-walkdir-lstat", func(b *testing.B) {
		for b.Loop() {
			var total int64
			filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil {
					if fi, err := os.Lstat(p); err == nil {
						total += fi.Size()
					}
				}
				return nil
			})
		}
	})
}
