package readmodel

// Hooks for the tests of package sandbox (its export_test.go hands them on).

// SetOverviewWalkHook makes tests act as a refresh starts its walk.
func (m *Model) SetOverviewWalkHook(fn func()) { m.cache.walkHook = fn }

// OverviewRefreshWaiters is how many callers wait for the refresh in progress.
func (m *Model) OverviewRefreshWaiters() int {
	m.cache.mu.Lock()
	defer m.cache.mu.Unlock()
	st := m.cache.refreshes[""]
	if st == nil || st.flight == nil {
		return -1
	}
	return st.flight.waiters
}
