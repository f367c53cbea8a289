package readmodel

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/sandbox/internal/core/trend"
	"github.com/xfsq/xfsq/store"
)

// The insight a reader polls or asks for one project, beside the figures
// the core's Report fills (full-in, reclaimable): when each tree fills at
// its trend, cached for a poller; one project's trends with the reason
// when there is no estimate; and what the limits promise of the disk.

// treeTrend fits the tree's complete snapshots over trend.Window and its
// usage read now (on XFS and ext4 the kernel's count) against its hard
// byte limit.
func (m *Model) treeTrend(ctx context.Context, r *core.TreeStatus, now time.Time) (trend.Trend, error) {
	snaps, err := m.Store.SnapshotTotals(ctx, store.TreeKey{Project: r.Project, Area: r.Area}, now.Add(-trend.Window))
	if err != nil {
		return trend.Trend{}, err
	}
	return core.TrendOf(r, snaps, now), nil
}

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
func (m *Model) FullAt(ctx context.Context) map[core.TreeKey]time.Time {
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
func (m *Model) snapshotsMoved(ctx context.Context) bool {
	mark, err := m.ChangeMark(ctx)
	m.fullAt.mu.Lock()
	defer m.fullAt.mu.Unlock()
	return err == nil && mark.Snapshots != m.fullAt.mark
}

func (m *Model) fitFullAt(ctx context.Context) error {
	mark, err := m.ChangeMark(ctx)
	if err != nil {
		return err
	}
	rows, err := m.Usage(ctx)
	if err != nil {
		return err
	}
	now := m.Now()
	// Every tree's history in one read, as the core's report reads it: one
	// per tree made a server's first scrape cost twice the CPU it did.
	history, err := m.Store.AllSnapshotTotals(ctx, now.Add(-trend.Window))
	if err != nil {
		return err
	}
	out := make(map[store.TreeKey]time.Time, len(rows))
	for i := range rows {
		k := store.TreeKey{Project: rows[i].Project, Area: rows[i].Area}
		if t := core.TrendOf(&rows[i], history[k], now); t.FullIn != nil {
			out[k] = now.Add(*t.FullIn)
		}
	}
	c := &m.fullAt
	c.mu.Lock()
	c.byTree, c.at, c.mark = out, now, mark.Snapshots
	c.mu.Unlock()
	return nil
}

// TreeTrend is one tree's trend, with why there is no estimate.
type TreeTrend struct {
	Area string
	trend.Trend
}

// ProjectTrends fits the trend of each of a project's trees (full-in for
// one project: what the report and overview show, with the reason when
// there is no estimate).
func (m *Model) ProjectTrends(ctx context.Context, name string) ([]TreeTrend, error) {
	p, err := m.Show(ctx, name)
	if err != nil {
		return nil, err
	}
	now := m.Now()
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

// Promised is how much the root's hard byte limits promise of its disk:
// the wire's (api/v1), which the overview and the report answer.
type Promised = apiv1.Promised

// promisedOf is how much rows' hard byte limits promise of a disk of disk
// bytes.
func promisedOf(rows []core.TreeStatus, disk uint64) Promised {
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

// setPromised gives the disk p: the wire's disk has the promise's members
// as its own.
func setPromised(d *OverviewDisk, p Promised) {
	d.PromisedBytes, d.UnlimitedTrees, d.OvercommitRatio = p.PromisedBytes, p.UnlimitedTrees, p.OvercommitRatio
}
