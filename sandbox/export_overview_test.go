package sandbox

// SetOverviewWalkHook makes tests act as a refresh starts its walk.
func (m *Manager) SetOverviewWalkHook(fn func()) { m.overview.walkHook = fn }

// OverviewRefreshWaiters is how many callers wait for the refresh in progress.
func (m *Manager) OverviewRefreshWaiters() int {
	m.overview.mu.Lock()
	defer m.overview.mu.Unlock()
	st := m.overview.refreshes[""]
	if st == nil || st.flight == nil {
		return -1
	}
	return st.flight.waiters
}
