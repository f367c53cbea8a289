package sandbox

import (
	"github.com/xfsq/xfsq/inventory"
)

// TreeProgress is a walk's running totals with the tree it walks, so that a
// shell can say which tree a long pass is on and, on XFS, how far along it
// is against the inodes the kernel charges to the tree's project ID.
type TreeProgress struct {
	Project, Area string
	inventory.Progress
	// KernelInodes is the kernel's inode count for the tree's project ID
	// when the walk began; 0 when unknown (the fallback backend).
	KernelInodes uint64
}

// Percent is how much of the kernel's count the walk has seen, or -1
// when there is no count to compare with. A tree that grows during the
// walk can pass 100; it is capped there.
func (p TreeProgress) Percent() float64 {
	if p.KernelInodes == 0 {
		return -1
	}
	return min(100, float64(p.Files+p.Dirs)*100/float64(p.KernelInodes))
}

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
