package core

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/xfsq/xfsq/store"
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

// An add that failed and whose rollback failed too leaves its project row
// in state adding, held by an operation that has ended: in the same
// process, the next add clears it and doctor calls it interrupted, not
// "being added by another process" until a restart.
func TestFailedAddRecoverableInProcess(t *testing.T) {
	ctx := context.Background()
	m, _ := managerWithOmni(t, t.TempDir())
	failed, end := BeginOp(ctx)
	if err := m.Store.InTx(ctx, func(tx *store.Tx) error {
		_, _, err := tx.InsertProject(ctx, "left", HolderOf(failed), time.Now())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	end() // the add returned its error
	findings, err := m.Doctor(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, f := range findings {
		if f.Project == "left" {
			kinds = append(kinds, f.Kind)
		}
	}
	if len(kinds) != 1 || kinds[0] != InterruptedAdd {
		t.Errorf("doctor on the leftover of a failed add: %v, want [%s]", kinds, InterruptedAdd)
	}
	if _, err := m.Add(ctx, "left", AddOptions{}); err != nil {
		t.Fatalf("add after a failed add in the same process: %v", err)
	}
}
