package retention

import (
	"context"
	"time"

	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/sweep"
)

// recordReclaimable keeps what a plan of projects found the policies would
// free in each of their trees (areas), less what its sweep freed (freed;
// nil for a dry run). A leased project's trees keep what an
// earlier plan found: the lease defers their sweep, not what it would free.
func (m *Sweeper) recordReclaimable(ctx context.Context, projects []sweep.Project, areas map[string]bool, plan sweep.Plan, freed []sweep.Done, now time.Time) error {
	if m.Store.ReadOnly() {
		return nil
	}
	gone := make(map[string]bool, len(freed))
	for _, d := range freed {
		gone[d.Path] = true
	}
	byTree := map[store.TreeKey]*store.Reclaimable{}
	var out []store.Reclaimable
	for _, p := range projects {
		if len(p.LeasedBy) > 0 {
			continue
		}
		for _, a := range sweepAreas(p.Name, areas) {
			k := store.TreeKey{Project: p.Name, Area: a}
			out = append(out, store.Reclaimable{TreeKey: k, PlannedAt: now})
		}
	}
	for i := range out {
		byTree[out[i].TreeKey] = &out[i]
	}
	for _, e := range plan.Evict {
		r := byTree[store.TreeKey{Project: e.Project, Area: e.Area}]
		if r == nil {
			continue
		}
		if !gone[e.Path] {
			r.Bytes += e.Bytes
			r.Entries++
		}
	}
	return m.Store.SetReclaimable(ctx, out)
}
