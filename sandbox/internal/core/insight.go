package core

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/store"
)

// What an operator asks first, beside usage and limits: when a tree will
// be full at its trend (trend.go's rule), what the sweep policies would
// free in it now, and how much the root's limits promise of its disk.

// insight fills the rows' full-in estimate and reclaimable bytes.
func (m *Manager) insight(ctx context.Context, rows []TreeStatus) error {
	reclaim, err := m.Store.AllReclaimable(ctx)
	if err != nil {
		return err
	}
	now := m.now()
	if len(rows) == 0 {
		return nil
	}
	history, err := m.Store.AllSnapshotTotals(ctx, now.Add(-TrendWindow))
	if err != nil {
		return err
	}
	for i := range rows {
		r := &rows[i]
		k := store.TreeKey{Project: r.Project, Area: r.Area}
		if rc, ok := reclaim[k]; ok {
			r.ReclaimableBytes = &rc.Bytes
		}
		t := trendOf(r, history[k], now)
		if t.FullIn != nil {
			secs := t.FullIn.Seconds()
			r.FullInSeconds = &secs
		}
	}
	return nil
}

// treeTrend fits the tree's complete snapshots over TrendWindow and its
// usage read now (on XFS and ext4 the kernel's count) against its hard
// byte limit.
func (m *Manager) treeTrend(ctx context.Context, r *TreeStatus, now time.Time) (Trend, error) {
	snaps, err := m.Store.SnapshotTotals(ctx, store.TreeKey{Project: r.Project, Area: r.Area}, now.Add(-TrendWindow))
	if err != nil {
		return Trend{}, err
	}
	return trendOf(r, snaps, now), nil
}

// trendOf fits a tree's complete snapshots and its usage now.
func trendOf(r *TreeStatus, snaps []store.Snapshot, now time.Time) Trend {
	points := make([]UsagePoint, 0, len(snaps)+1)
	for _, s := range snaps {
		if !s.Partial {
			points = append(points, UsagePoint{At: s.At, Bytes: s.SizeBytes})
		}
	}
	at := now
	if r.UsageAsOf != nil {
		at = *r.UsageAsOf // the fallback's figure is its walk's, plus xfsq's writes since
	}
	points = append(points, UsagePoint{At: at, Bytes: r.UsedBytes})
	return FullIn(points, r.BytesHard, now)
}

// diskTrend fits the disk's use at each scheduled pass over TrendWindow
// (storage.snapshot records what was free) and now, against its size.
func (m *Manager) diskTrend(ctx context.Context, total, free uint64, now time.Time) (Trend, error) {
	passes, err := m.Store.PassFree(ctx, now.Add(-TrendWindow))
	if err != nil {
		return Trend{}, err
	}
	points := make([]UsagePoint, 0, len(passes)+1)
	for _, p := range passes {
		if p.FreeBytes <= total {
			points = append(points, UsagePoint{At: p.At, Bytes: total - p.FreeBytes})
		}
	}
	points = append(points, UsagePoint{At: now, Bytes: total - min(free, total)})
	return FullIn(points, total, now), nil
}

// diskSize is the size and available bytes of the root's filesystem.
func (m *Manager) diskSize() (total, free uint64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(m.Root, &st); err != nil {
		return 0, 0, false
	}
	return st.Blocks * uint64(st.Bsize), st.Bavail * uint64(st.Bsize), true
}

// Promised is how much the root's hard byte limits promise of its disk,
// as an Incus pool shows it: the sum of every tree's hard byte limit,
// how many trees have none (unbounded: promised the whole disk), and the
// ratio of the sum to the disk's size (over 1: overcommitted).
type Promised struct {
	PromisedBytes   uint64  `json:"promised_bytes"`
	UnlimitedTrees  int     `json:"unlimited_trees"`
	OvercommitRatio float64 `json:"overcommit_ratio"`
}

func promised(rows []TreeStatus, disk uint64) Promised {
	var p Promised
	for _, r := range rows {
		if r.BytesHard == 0 {
			p.UnlimitedTrees++
			continue
		}
		p.PromisedBytes += r.BytesHard
	}
	if disk > 0 {
		p.OvercommitRatio = float64(p.PromisedBytes) / float64(disk)
	}
	return p
}

// TreeKey names one tree: a project (or RootOwner) and an area.
type TreeKey = store.TreeKey

// fullAtCache is when each tree will be full at its trend, as last fitted:
// a poller (a scrape) reads it without reading the store, and it is fitted
// again in the background once a new snapshot is stored or it is
// fullAtMaxAge old.
type fullAtCache struct {
	mu     sync.Mutex
	at     time.Time // when it was fitted; zero: never
	mark   int64     // the store's snapshot mark it was fitted at
	byTree map[store.TreeKey]time.Time
	busy   atomic.Bool
}

const fullAtMaxAge = 5 * time.Minute

// FullAt says when each tree will reach its hard byte limit at its trend
// (the trees not filling, or not known, are absent), as last fitted. It
// never waits on the store: a fit due is made in the background, and the
// first call answers with nothing known yet.
func (m *Manager) FullAt(ctx context.Context) map[TreeKey]time.Time {
	c := &m.fullAt
	c.mu.Lock()
	out, at := c.byTree, c.at
	c.mu.Unlock()
	if (at.IsZero() || time.Since(at) > fullAtMaxAge || m.snapshotsMoved(ctx)) && c.busy.CompareAndSwap(false, true) {
		ctx := context.WithoutCancel(ctx)
		go func() {
			defer c.busy.Store(false)
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			m.fitFullAt(ctx) // best effort: the next call tries again
		}()
	}
	return out
}

// snapshotsMoved says whether a snapshot was stored since the last fit.
func (m *Manager) snapshotsMoved(ctx context.Context) bool {
	mark, err := m.changeMark(ctx)
	m.fullAt.mu.Lock()
	defer m.fullAt.mu.Unlock()
	return err == nil && mark.Snapshots != m.fullAt.mark
}

func (m *Manager) fitFullAt(ctx context.Context) error {
	mark, err := m.changeMark(ctx)
	if err != nil {
		return err
	}
	rows, err := m.Usage(ctx)
	if err != nil {
		return err
	}
	now := m.now()
	// Every tree's history in one read, as insight reads it: one per tree
	// made a server's first scrape cost twice the CPU it did before.
	history, err := m.Store.AllSnapshotTotals(ctx, now.Add(-TrendWindow))
	if err != nil {
		return err
	}
	out := make(map[store.TreeKey]time.Time, len(rows))
	for i := range rows {
		k := store.TreeKey{Project: rows[i].Project, Area: rows[i].Area}
		if t := trendOf(&rows[i], history[k], now); t.FullIn != nil {
			out[k] = now.Add(*t.FullIn)
		}
	}
	c := &m.fullAt
	c.mu.Lock()
	c.byTree, c.at, c.mark = out, now, mark.Snapshots
	c.mu.Unlock()
	return nil
}

// Promise is what rows' hard byte limits promise of the root's disk; ok is
// false when the disk's size cannot be read.
func (m *Manager) Promise(rows []TreeStatus) (Promised, uint64, bool) {
	total, _, ok := m.diskSize()
	if !ok {
		return Promised{}, 0, false
	}
	return promised(rows, total), total, true
}

// TreeTrend is one tree's trend, with why there is no estimate.
type TreeTrend struct {
	Area string
	Trend
}

// ProjectTrends fits the trend of each of a project's trees (full-in for
// one project: what the report and overview show, with the reason when
// there is no estimate).
func (m *Manager) ProjectTrends(ctx context.Context, name string) ([]TreeTrend, error) {
	p, err := m.Show(ctx, name)
	if err != nil {
		return nil, err
	}
	now := m.now()
	out := make([]TreeTrend, 0, len(p.Trees))
	for i := range p.Trees {
		t, err := m.treeTrend(ctx, &p.Trees[i], now)
		if err != nil {
			return nil, err
		}
		out = append(out, TreeTrend{Area: p.Trees[i].Area, Trend: t})
	}
	return out, nil
}
