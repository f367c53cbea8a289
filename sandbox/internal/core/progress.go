package core

import (
	"github.com/xfsq/xfsq/inventory"
)

// TreeProgress is a walk's running totals with the tree it walks
// (inventory.TreeProgress): shells name it from here.
type TreeProgress = inventory.TreeProgress

// kernelInodes is the kernel's inode count for t's project ID; 0 when the
// backend keeps none.
func (m *Manager) kernelInodes(t Tree) uint64 {
	if m.xfs == nil {
		return 0
	}
	q, err := m.xfs.Get(t.ProjectID)
	if err != nil {
		return 0
	}
	return q.Inodes
}

// treeProgress wraps report, if set, as a walk's Progress for tree t.
func (m *Manager) treeProgress(t Tree, report func(TreeProgress)) func(inventory.Progress) {
	if report == nil {
		return nil
	}
	base := TreeProgress{Project: t.Project, Area: t.Area, KernelInodes: m.kernelInodes(t)}
	return func(p inventory.Progress) {
		tp := base
		tp.Progress = p
		report(tp)
	}
}

// WalkProgress is treeProgress for a walk a caller outside the package
// makes of a tree (files' walk of a sub-path).
func (m *Manager) WalkProgress(t Tree, report func(TreeProgress)) func(inventory.Progress) {
	return m.treeProgress(t, report)
}
