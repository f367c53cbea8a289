package core

import (
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/sandbox/internal/core/treewalk"
	"github.com/xfsq/xfsq/store"
)

// A tree is walked beneath the core (sandbox/internal/core/treewalk:
// beneath the tenant's mounts, through no symlink); these are the core's
// names for it.

// walks is the walker of m's root.
func (m *Manager) walks() *treewalk.Walker { return &treewalk.Walker{Root: m.Root} }

// measureTree measures t for a baseline (treewalk's MeasureTree).
func (m *Manager) measureTree(t store.Tree, writing map[string]inventory.InProgress) (quota.Usage, store.WalkSeen, error) {
	return m.walks().MeasureTree(t, writing)
}

// WalkIn walks the directory rel inside the tree t (a path its caller has
// checked, as the file layer does for top PROJECT PATH) beneath the
// tenant's mounts, through no symlink (treewalk's WalkIn). Nothing is
// recorded.
func (m *Manager) WalkIn(t store.Tree, rel string, opts inventory.Options) (*inventory.Result, error) {
	return m.walks().WalkIn(t, rel, opts)
}

// inProgress is a walk's Writing for the walker.
func inProgress(w store.Walk) map[string]inventory.InProgress { return treewalk.InProgress(w) }
