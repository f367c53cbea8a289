package project

// ForgetReads empties m's read cache, for benchmarks of the uncached path.
func ForgetReads(m *Manager) {
	m.reads.mu.Lock()
	m.reads.gen, m.reads.projects = "", nil
	m.reads.mu.Unlock()
}
