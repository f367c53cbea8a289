package usage

import (
	"context"
	"time"

	"github.com/xfsq/xfsq/sandbox/internal/core/treewalk"
	"github.com/xfsq/xfsq/store"
)

// walkBaselinesOf walks every fallback tree of names now (through the
// core, Source.MeasureTree) and records each walk as its baseline, for a
// sweep's fresh figures (SweepUsage), in batches as a snapshot pass stores its walks
// (store.BeginWalks before a batch's walks, one transaction of
// SetBaselines after; treewalk.BatchMax and BatchWindow bound a batch):
// a constant few statements a batch, where a tree's walk was two
// transactions of its own. A project whose walk, or whose batch's
// record, failed is in failed with why; its other trees' walks that were
// recorded stay recorded, as they did one by one.
func (m *Reads) walkBaselinesOf(ctx context.Context, names []string, byProject map[string][]store.Tree) (failed map[string]error, err error) {
	failed = map[string]error{}
	if m.Store.ReadOnly() { // a full disk: nothing recorded, the figures the store has
		return failed, nil
	}
	var trees []store.Tree
	for _, n := range names {
		trees = append(trees, byProject[n]...)
	}
	var (
		began   time.Time
		walks   map[store.TreeKey]store.Walk
		recs    []store.WalkRecord
		batched int
	)
	flush := func() {
		if len(recs) > 0 {
			if err := m.Store.InTx(ctx, func(tx *store.Tx) error { return tx.SetBaselines(ctx, recs) }); err != nil {
				for _, r := range recs {
					if _, ok := failed[r.Snapshot.Project]; !ok {
						failed[r.Snapshot.Project] = err
					}
				}
			}
		}
		walks, recs, batched = nil, nil, 0
	}
	for i, t := range trees {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, ok := failed[t.Project]; ok {
			continue
		}
		if walks != nil && (batched >= treewalk.BatchMax || time.Since(began) > treewalk.BatchWindow) {
			flush()
		}
		if walks == nil {
			next := trees[i:min(len(trees), i+treewalk.BatchMax)]
			keys := make([]store.TreeKey, len(next))
			for j, t := range next {
				keys[j] = store.TreeKey{Project: t.Project, Area: t.Area}
			}
			began = m.src.Now().Truncate(time.Microsecond) // as the store keeps it
			var err error
			if walks, err = m.Store.BeginWalks(ctx, keys, began); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				for _, t := range next {
					if _, ok := failed[t.Project]; !ok {
						failed[t.Project] = err
					}
				}
				walks = map[store.TreeKey]store.Walk{} // the batch's trees are failed
			}
		}
		batched++
		key := store.TreeKey{Project: t.Project, Area: t.Area}
		walk, ok := walks[key]
		if !ok {
			continue // its batch could not begin: failed above
		}
		u, seen, err := m.src.MeasureTree(t, walk)
		if err != nil {
			failed[t.Project] = err
			continue
		}
		recs = append(recs, store.WalkRecord{Snapshot: store.Snapshot{Project: t.Project, Area: t.Area},
			Baseline: &store.WalkBaseline{Usage: u, Walk: walk, Seen: seen}})
	}
	flush()
	return failed, nil
}
