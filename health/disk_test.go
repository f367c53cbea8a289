package health

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"golang.org/x/sys/unix"
)

// makeRoot lays out a sandbox root's area bases, as xfsq init does.
func makeRoot(t testing.TB) string {
	root := t.TempDir()
	for _, a := range area.Bases {
		if err := os.Mkdir(filepath.Join(root, a), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestDiskStatfsOfRootAndAreas(t *testing.T) {
	root := makeRoot(t)
	var want unix.Statfs_t
	if err := unix.Statfs(root, &want); err != nil {
		t.Fatal(err)
	}
	th := DefaultThresholds()
	d := &diskCollector{root: root, th: th}
	p, err := d.collect(context.Background())
	if err != nil || len(p.Paths) != 1+len(area.Bases) {
		t.Fatalf("%+v, %v", p, err)
	}
	r := p.Paths[0]
	if r.Path != root || r.Area != "" || r.TotalBytes != want.Blocks*uint64(want.Bsize) || r.TotalInodes != want.Files || r.AvailableBytes > r.FreeBytes {
		t.Errorf("root %+v; statfs says %d blocks of %d, %d inodes", r, want.Blocks, want.Bsize, want.Files)
	}
	for i, a := range area.Bases {
		if p.Paths[i+1].Area != a || p.Paths[i+1].Error != "" {
			t.Errorf("area %s: %+v", a, p.Paths[i+1])
		}
	}

	// Thresholds above what is free make the same filesystem warn, then critical.
	free := r.FreePercent
	for _, c := range []struct {
		warn, crit float64
		want       Status
	}{{free + 1, 0, Warn}, {free + 2, free + 1, Critical}, {0, 0, OK}} {
		d.th.DiskFreeWarnPercent, d.th.DiskFreeCriticalPercent = c.warn, c.crit
		p, _ := d.collect(context.Background())
		if p.Status != c.want || (c.want != OK && (!strings.Contains(p.Reason, root) || !strings.Contains(p.Fix, "sweep"))) {
			t.Errorf("warn %g%% critical %g%% with %g%% free: %s (%s); want %s naming the path", c.warn, c.crit, free, p.Status, p.Reason, c.want)
		}
	}

	// A missing area base fails the part, keeps the other figures, and says how to fix it.
	os.Remove(filepath.Join(root, "scratch"))
	d.th = th
	p = measure(context.Background(), defaultBudget, "disk", "", d.collect)
	if p.Status != Error || !strings.Contains(p.Error, "scratch") || !strings.Contains(p.Fix, "initialise the root") || p.Paths[0].TotalBytes == 0 {
		t.Errorf("missing scratch/: %+v", *p)
	}
}

// TestStatfsCallsLeftWaitingAreBounded: with maxWaiting statfs calls left
// waiting at one path (a tenant mounting one filesystem that never
// answers after another on inbound/), that path is not asked again: the
// call answers at once with why. The other paths are still asked, and the
// path is again once one of its calls ends.
func TestStatfsCallsLeftWaitingAreBounded(t *testing.T) {
	d := &diskCollector{root: makeRoot(t), inflight: map[statfsKey]*statfsCall{}}
	stuck := filepath.Join(d.root, "inbound")
	for i := range maxWaiting {
		d.inflight[statfsKey{path: stuck, mnt: uint64(1000 + i)}] = &statfsCall{done: make(chan struct{})}
	}
	answered := func(c *statfsCall) error {
		select {
		case <-c.done:
			return c.err
		case <-time.After(3 * time.Second):
			t.Fatal("statfs did not answer")
			return nil
		}
	}
	if err := answered(d.statfs(stuck)); err == nil || !strings.Contains(err.Error(), "already wait") {
		t.Errorf("a statfs of %s with %d waiting there: %v, want a refusal saying why", stuck, maxWaiting, err)
	}
	if err := answered(d.statfs(d.root)); err != nil {
		t.Errorf("the root's statfs with another path's calls waiting: %v", err)
	}
	delete(d.inflight, statfsKey{path: stuck, mnt: 1000})
	if err := answered(d.statfs(stuck)); err != nil {
		t.Errorf("with room again, statfs of %s: %v", stuck, err)
	}
}
