package inventory

// TreeProgress is a walk's running totals with the tree it walks, so that a
// shell can say which tree a long pass is on and, on XFS, how far along it
// is against the inodes the kernel charges to the tree's project ID.
type TreeProgress struct {
	Project, Area string
	Progress
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
