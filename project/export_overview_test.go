package project

// SetOverviewWalkHook makes tests act as a refresh starts its walk.
func (m *Manager) SetOverviewWalkHook(fn func()) { m.overview.walkHook = fn }

// OverviewRefreshWaiters is how many callers wait for the refresh in progress.
func (m *Manager) OverviewRefreshWaiters() int {
	m.overview.mu.Lock()
	defer m.overview.mu.Unlock()
	if m.overview.refresh == nil {
		return -1
	}
	return m.overview.refresh.waiters
}
