package core

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/sweep"
)

// Every limit a tree reaches is journalled once, by whoever sees it first:
// a write through xfsq (the store, in the write's own transaction), a
// check, a walk, the kernel's counters at a scheduled pass or a scrape, a
// sweep's quota check. Each observer compares what it sees with what this
// process last knew of the recorded states (crossingCache) and goes to the
// store only when they differ; there a compare and set decides which of
// two observers journals it (store.RecordCrossings). It is the one write a
// read may make: a limit reached must reach the journal whoever reads it.

// crossingsTTL is how long the recorded states a process knows are
// trusted before they are read again: another process may have recorded
// a change since, which this one would otherwise take for its own news or
// miss.
const crossingsTTL = time.Minute

// crossingCache is what this process last knew of the recorded crossings.
type crossingCache struct {
	mu     sync.Mutex
	over   map[store.CrossingKey]bool
	readAt time.Time
	// busy: a scrape's recording runs in the background, one at a time.
	busy atomic.Bool
}

// changed lists the trees of rows whose limits differ from what is known
// recorded; ok is false when what is known is too old to say.
func (c *crossingCache) changed(rows []TreeStatus, now time.Time) (out []int, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.over == nil || now.Sub(c.readAt) > crossingsTTL {
		return nil, false
	}
	for i := range rows {
		t := &rows[i]
		over := store.LimitsOver(limitsOf(t), quota.Usage{Bytes: t.UsedBytes, Inodes: t.UsedInodes}, t.FullWithin())
		k := store.TreeKey{Project: t.Project, Area: t.Area}
		for j, name := range journal.LimitNames {
			if over[j] != c.over[store.CrossingKey{TreeKey: k, Limit: name}] {
				out = append(out, i)
				break
			}
		}
	}
	return out, true
}

func limitsOf(t *TreeStatus) quota.Limits {
	return quota.Limits{BytesSoft: t.BytesSoft, BytesHard: t.BytesHard, InodesSoft: t.InodesSoft, InodesHard: t.InodesHard}
}

// noteLimits records the crossings rows show that are not recorded yet,
// journalling each one this observer is the first to see.
func (m *Manager) noteLimits(ctx context.Context, rows []TreeStatus, seenBy string) error {
	if m.Store.ReadOnly() || len(rows) == 0 {
		return nil
	}
	c := &m.crossings
	idx, ok := c.changed(rows, m.now())
	if !ok {
		over, err := m.Store.CrossingStates(ctx)
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.over, c.readAt = over, m.now()
		c.mu.Unlock()
		if idx, _ = c.changed(rows, m.now()); len(idx) == 0 {
			return nil
		}
	}
	if len(idx) == 0 {
		return nil
	}
	var cs []store.Crossing
	c.mu.Lock()
	for _, i := range idx {
		t := &rows[i]
		var bytesGrace, inodesGrace time.Time
		if t.BytesGraceEnds != nil {
			bytesGrace = *t.BytesGraceEnds
		}
		if t.InodesGraceEnds != nil {
			inodesGrace = *t.InodesGraceEnds
		}
		for _, x := range store.LimitsCrossings(store.TreeKey{Project: t.Project, Area: t.Area}, limitsOf(t),
			quota.Usage{Bytes: t.UsedBytes, Inodes: t.UsedInodes}, t.FullWithin(), bytesGrace, inodesGrace, seenBy) {
			if x.Over != c.over[x.CrossingKey] {
				cs = append(cs, x)
			}
		}
	}
	c.mu.Unlock()
	if _, err := m.Store.RecordCrossings(ctx, m.actor(ctx), cs); err != nil {
		return err
	}
	// Recorded now, by this observer or one before it: either way, the
	// store's state is what was seen.
	c.mu.Lock()
	for _, x := range cs {
		c.over[x.CrossingKey] = x.Over
	}
	c.mu.Unlock()
	return nil
}

// noteLimitsLater is noteLimits for a scrape: it never waits on the store
// when anything is to be recorded (or what is known must be read again),
// but records in the background, one recording at a time; a scrape that
// finds one under way leaves its news to the next.
func (m *Manager) noteLimitsLater(ctx context.Context, rows []TreeStatus, seenBy string) {
	if m.Store.ReadOnly() || len(rows) == 0 {
		return
	}
	if idx, ok := m.crossings.changed(rows, m.now()); ok && len(idx) == 0 {
		return
	}
	if !m.crossings.busy.CompareAndSwap(false, true) {
		return
	}
	rows = append([]TreeStatus(nil), rows...) // the caller's to keep
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer m.crossings.busy.Store(false)
		ctx, cancel := context.WithTimeout(ctx, time.Minute) // no wait on the store is unbounded
		defer cancel()
		m.noteLimits(ctx, rows, seenBy) // best effort: the next scrape tries again
	}()
}

// kernelOr says who sees usage read now: the kernel's counters on XFS and
// ext4, else what the fallback's reader is.
func (m *Manager) kernelOr(fallback string) string {
	if m.xfs != nil {
		return journal.SeenByKernel
	}
	return fallback
}

// noteSweepOverSoft records the trees a sweep's quota check found over
// their soft byte limits (it measures bytes only).
func (m *Manager) NoteSweepOverSoft(ctx context.Context, overs []sweep.OverSoft, sweepID string) error {
	if len(overs) == 0 || m.Store.ReadOnly() {
		return nil
	}
	cs := make([]store.Crossing, 0, len(overs))
	for _, o := range overs {
		k := store.CrossingKey{TreeKey: store.TreeKey{Project: o.Project, Area: o.Area}, Limit: journal.LimitBytesSoft}
		cs = append(cs, store.Crossing{CrossingKey: k, Over: true, Exceeded: journal.QuotaExceeded{Area: o.Area, Limit: journal.LimitBytesSoft,
			LimitValue: new(o.Soft), UsedBytes: o.Bytes, BytesSoft: o.Soft, SweepID: sweepID, SeenBy: journal.SeenBySweep}})
	}
	_, err := m.Store.RecordCrossings(ctx, m.actor(ctx), cs)
	return err
}

// noteWalked records the crossings of trees just walked (of area, "" for
// all): on the fallback the walk is their new figure, on XFS and ext4 the
// kernel's counters are read with it.
func (m *Manager) noteWalked(ctx context.Context, trees []store.Tree, area string) error {
	var walked []store.Tree
	for _, t := range trees {
		if area == "" || t.Area == area {
			walked = append(walked, t)
		}
	}
	if m.xfs != nil { // the kernel's counters: no statement per tree
		rows, err := m.status(ctx, walked, nil, Read{})
		if err != nil {
			return err
		}
		return m.noteLimits(ctx, rows, m.kernelOr(journal.SeenByWalk))
	}
	// The fallback's figures of every tree of the host in one statement
	// (readReport), those walked kept: a read per tree was a round trip
	// per tree after a pass that stored its walks in a few.
	all, err := m.readReport(ctx)
	if err != nil {
		return err
	}
	keep := make(map[store.TreeKey]bool, len(walked))
	for _, t := range walked {
		keep[store.TreeKey{Project: t.Project, Area: t.Area}] = true
	}
	rows := all[:0]
	for _, r := range all {
		if keep[store.TreeKey{Project: r.Project, Area: r.Area}] {
			rows = append(rows, r)
		}
	}
	return m.noteLimits(ctx, rows, m.kernelOr(journal.SeenByWalk))
}
