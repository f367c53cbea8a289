package tenanttest

import (
	"sync/atomic"
	"testing"
)

// The loop runs until stopped, and no run begins after stop returns.
func TestLoopRunsUntilStopped(t *testing.T) {
	var runs atomic.Int64
	stop := Loop(t, func() { runs.Add(1) })
	for runs.Load() < 100 {
	}
	stop()
	n := runs.Load()
	stop() // twice is harmless
	if runs.Load() != n {
		t.Errorf("ran %d more times after stop returned", runs.Load()-n)
	}
}
