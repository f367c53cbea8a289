package core

import (
	"context"
	"sync"
	"testing"
)

// Two goroutines, each its own sweep, take the sweep lock of one project
// at once: exactly one gets it, the other is told who holds it.
func TestTwoGoroutinesOneSweepLock(t *testing.T) {
	ctx := context.Background()
	m, _ := managerWithOmni(t, t.TempDir())
	var wg sync.WaitGroup
	holders, busy, errs := make([]string, 2), make([]string, 2), make([]error, 2)
	ends := make([]func(), 2)
	start := make(chan struct{})
	for i := range 2 {
		opCtx, end := BeginOp(ctx)
		holders[i], ends[i] = HolderOf(opCtx), end
		wg.Go(func() {
			<-start
			busy[i], errs[i] = m.Store.LockSweep(opCtx, "omni", m.claimFor(opCtx))
		})
	}
	defer func() {
		for _, end := range ends {
			end()
		}
	}()
	close(start)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	switch {
	case busy[0] == "" && busy[1] == holders[0], busy[1] == "" && busy[0] == holders[1]:
	default:
		t.Errorf("two sweeps of one project: busy %q and %q (holders %q, %q); want exactly one to hold the lock", busy[0], busy[1], holders[0], holders[1])
	}
}
