// Command gentree makes a reproducible tree of many small files in nested
// directories, for the walker benchmarks (docs/benchmarks.md):
//
//	go run ./scripts/gentree -files 200000 /var/tmp/xfsq-bench-200k
//
// About 50 files per leaf directory, three levels of directories, sizes from
// 0 to 16 KiB with a few larger ones, and a hard link every 1000 files. The
// same -files and -seed always give the same tree.
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
)

func main() {
	files := flag.Int("files", 200000, "how many files")
	seed := flag.Uint64("seed", 1, "random seed")
	sparse := flag.Bool("sparse", false, "give files their sizes without writing data (holes): for memory benchmarks, where only how many files there are matters, made in a fraction of the time and disk")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: gentree [-files N] [-seed S] DIR   (DIR must not exist)")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || *files < 1 {
		flag.Usage()
		os.Exit(2)
	}
	dir := flag.Arg(0)
	if _, err := os.Stat(dir); err == nil {
		fmt.Fprintf(os.Stderr, "gentree: %s exists; remove it or pick another\n", dir)
		os.Exit(1)
	}
	const perDir = 50
	leaves := (*files + perDir - 1) / perDir
	fan := int(math.Ceil(math.Cbrt(float64(leaves))))
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	work := make(chan int)
	for range 8 {
		wg.Go(func() {
			buf := make([]byte, 256<<10)
			for leaf := range work {
				rng := rand.New(rand.NewPCG(*seed, uint64(leaf)))
				d := filepath.Join(dir, fmt.Sprintf("l1-%03d", leaf/(fan*fan)), fmt.Sprintf("l2-%03d", leaf/fan%fan), fmt.Sprintf("l3-%03d", leaf%fan))
				if err := os.MkdirAll(d, 0o755); err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
				for i := 0; i < perDir && leaf*perDir+i < *files; i++ {
					n := leaf*perDir + i
					size := rng.IntN(16 << 10)
					if n%997 == 0 {
						size = rng.IntN(len(buf))
					}
					p := filepath.Join(d, fmt.Sprintf("file-%06d.dat", n))
					if n%1000 == 999 && i > 0 { // a hard link to the previous file
						os.Link(filepath.Join(d, fmt.Sprintf("file-%06d.dat", n-1)), p)
						continue
					}
					if err := writeFile(p, buf[:size], *sparse); err != nil {
						select {
						case errs <- err:
						default:
						}
						return
					}
				}
			}
		})
	}
	for leaf := range leaves {
		work <- leaf
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		fmt.Fprintln(os.Stderr, "gentree:", err)
		os.Exit(1)
	default:
	}
	fmt.Printf("made %d files in %d leaf directories under %s\n", *files, leaves, dir)
}

// writeFile makes p with data's length, holding data or, sparse, a hole.
func writeFile(p string, data []byte, sparse bool) error {
	if !sparse {
		return os.WriteFile(p, data, 0o644)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if err := f.Truncate(int64(len(data))); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
