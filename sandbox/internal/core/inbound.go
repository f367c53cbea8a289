package core

import (
	"context"
	"slices"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/store"
)

// The inbound tree: <root>/inbound, where channels stage what they bring
// in until it is processed and removed. It belongs to the root, not to a
// project, so it is recorded under the RootOwner row (store.RootOwner):
// one tree, its own project ID, its hard byte limit from the setting
// default_inbound_quota. Init makes it; doctor --fix makes it on a root
// initialised before it existed. Removing what was processed is the
// channel's job; what a channel staged and never processed is swept by
// inbound_ttl (sweep.PolicyInbound) as _root's one area, in a sweep of
// _root or of every project (so the scheduled sweep pass covers it).

// inboundTree reads the inbound tree's row, if the root has one.
func (m *Manager) inboundTree(ctx context.Context) (store.Tree, bool, error) {
	trees, err := m.Store.Trees(ctx, RootOwner)
	if err != nil {
		return store.Tree{}, false, err
	}
	t, ok := inboundOf(trees)
	return t, ok, nil
}

// inboundOf finds the inbound tree among trees.
func inboundOf(trees []store.Tree) (store.Tree, bool) {
	i := slices.IndexFunc(trees, func(t store.Tree) bool { return t.Project == RootOwner && t.Area == area.Inbound })
	if i < 0 {
		return store.Tree{}, false
	}
	return trees[i], true
}

// ensureInboundTree makes the inbound tree unless the root has it.
func (m *Manager) ensureInboundTree(ctx context.Context) error {
	_, ok, err := m.inboundTree(ctx)
	if err != nil || ok {
		return err
	}
	return m.makeInboundTree(ctx)
}

// makeInboundTree records the RootOwner row and gives inbound/ its tree as
// project add gives a project its trees (an ID, the default limits; what
// is already staged there is adopted and counted), or leaves no tree.
func (m *Manager) makeInboundTree(ctx context.Context) error {
	if err := m.Store.InTx(ctx, func(tx *store.Tx) error { return tx.EnsureRootOwner(ctx, m.now()) }); err != nil {
		return err
	}
	return m.addMissingTree(ctx, RootOwner, area.Inbound)
}

// applyInboundQuota gives the inbound tree a new hard byte limit, as
// project set would (kernel, store, journal): default_inbound_quota is the
// limit of the one inbound tree, so setting it applies at once. A root
// without the tree yet takes the setting when doctor --fix makes it.
func (m *Manager) applyInboundQuota(ctx context.Context, bytesHard uint64) error {
	if _, ok, err := m.inboundTree(ctx); err != nil || !ok {
		return err
	}
	_, err := m.Set(ctx, RootOwner, area.Inbound, LimitChange{BytesHard: &bytesHard})
	return err
}

// ImpliedProjects is what a sweep or a snapshot covers when its caller
// named no project and did not ask for every one: the root's one inbound
// tree when inbound is the only area asked (sweep --area inbound);
// otherwise nothing, and the caller has to name the projects.
func ImpliedProjects(areas []string) []string {
	if slices.Equal(areas, []string{area.Inbound}) {
		return []string{RootOwner}
	}
	return nil
}
