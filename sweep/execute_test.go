package sweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/saferm"
)

func executor(t *testing.T, root string, journal *[]Record) *Executor {
	d, err := saferm.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return &Executor{SweepID: "sw-test", Root: d, Policy: policy, Now: time.Now,
		Leased: func(context.Context, string) (bool, error) { return false, nil },
		Journal: func(_ context.Context, _ string, rec Record) error {
			*journal = append(*journal, rec)
			return nil
		}}
}

// The executor stops a cache cut as soon as the cap is met, even when the
// plan (made from older sizes) lists more entries.
func TestExecutorStopsCacheCutAtTheCap(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-30 * 24 * time.Hour)
	var plan Plan
	for i := range 5 {
		p := fmt.Sprintf("cache/p/e%d", i)
		os.MkdirAll(filepath.Join(root, p), 0o755)
		os.WriteFile(filepath.Join(root, p, "f"), make([]byte, 40<<10), 0o644)
		os.Chtimes(filepath.Join(root, p, "f"), old, old)
		os.Chtimes(filepath.Join(root, p), old, old)
		plan.Evict = append(plan.Evict, Eviction{Project: "p", Area: AreaCache, Path: p, Policy: PolicyCache})
	}
	// The planner thought the cache held 200 KiB and its entries 40 KiB
	// each; the cap is 130 KiB: two deletions of ~44 KiB reach it.
	plan.CacheCap, plan.CacheBytes = 130<<10, map[string]uint64{"p": 200 << 10}
	var journal []Record
	res := executor(t, root, &journal).Run(context.Background(), plan)
	if len(res.Evicted) != 2 {
		t.Errorf("evicted %d entries, want 2 (the cap is met after two)", len(res.Evicted))
	}
	for i := 2; i < 5; i++ {
		if _, err := os.Stat(filepath.Join(root, fmt.Sprintf("cache/p/e%d", i))); err != nil {
			t.Errorf("e%d deleted after the cap was met", i)
		}
	}
	if len(journal) != 4 || journal[0].State != "pending" || journal[1].State != "done" {
		t.Errorf("journal %+v, want pending/done per deletion", journal)
	}
}

// A deletion whose pending record cannot be written is not made.
func TestExecutorNeedsTheJournal(t *testing.T) {
	root := t.TempDir()
	p := "cache/p/e"
	os.MkdirAll(filepath.Join(root, p), 0o755)
	old := time.Now().Add(-30 * 24 * time.Hour)
	os.Chtimes(filepath.Join(root, p), old, old)
	var journal []Record
	x := executor(t, root, &journal)
	x.Journal = func(context.Context, string, Record) error { return fmt.Errorf("database is gone") }
	res := x.Run(context.Background(), Plan{Evict: []Eviction{{Project: "p", Area: AreaScratch, Path: p}}})
	if len(res.Evicted) != 0 {
		t.Error("deleted without a journal record")
	}
	if _, err := os.Stat(filepath.Join(root, p)); err != nil {
		t.Error("the entry is gone although its pending record was never written")
	}
}

// A sweep past its time budget deletes nothing more and says why.
func TestExecutorBudget(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-30 * 24 * time.Hour)
	var plan Plan
	for i := range 3 {
		p := fmt.Sprintf("scratch/p/r%d", i)
		os.MkdirAll(filepath.Join(root, p), 0o755)
		os.Chtimes(filepath.Join(root, p), old, old)
		plan.Evict = append(plan.Evict, Eviction{Project: "p", Area: AreaScratch, Path: p})
	}
	var journal []Record
	x := executor(t, root, &journal)
	clock := time.Now()
	x.Now = func() time.Time { clock = clock.Add(time.Second); return clock } // each look at the clock: a second
	x.Budget = 2500 * time.Millisecond
	res := x.Run(context.Background(), plan)
	if len(res.Evicted) == 0 || len(res.Evicted) == 3 {
		t.Fatalf("evicted %d of 3 within a budget that runs out part-way", len(res.Evicted))
	}
	for _, s := range res.Skipped {
		if !strings.Contains(s.Reason, "time budget") {
			t.Errorf("skip %+v, want the time budget as the reason", s)
		}
	}
}
