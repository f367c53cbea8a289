package core

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/sweep"
)

// Two sweeps of one project in one process: while one holds the project's
// sweep lock, the other is turned away as a sweep of another process would
// be, instead of taking the lock as its own.
func TestSweepLockIsPerOperation(t *testing.T) {
	ctx := context.Background()
	m, _ := managerWithOmni(t, t.TempDir())
	first, end := BeginOp(ctx)
	defer end()
	busy, err := m.Store.LockSweep(first, "omni", m.claimFor(first))
	if err != nil || busy != "" {
		t.Fatalf("first sweep's lock: busy %q, %v", busy, err)
	}
	out, err := m.Sweep(ctx, SweepOptions{Projects: []string{"omni"}})
	if err != nil {
		t.Fatal(err)
	}
	err = out.BusyError()
	var conflict *SweepBusyError
	if !errors.As(err, &conflict) || errkind.Of(err) != errkind.Conflict || !slices.Equal(conflict.Projects, []string{"omni"}) {
		t.Fatalf("a second sweep of a locked project in the same process: %v, want a conflict naming omni", err)
	}
	end()
	// Once the first sweep's operation is over, its lock is stale.
	out, err = m.Sweep(ctx, SweepOptions{Projects: []string{"omni"}})
	if err != nil || out.BusyError() != nil || len(out.Skipped) != 0 {
		t.Fatalf("after the first sweep ended: skipped %+v, %v", out.Skipped, err)
	}
}

// A sweep asked for projects another operation is sweeping is a conflict
// the caller hears of (a 409 from the server, exit 1 from the CLI), with
// the outcome of the projects it could sweep; a sweep of every project
// only leaves the busy one alone, since the other sweep covers it.
func TestSweepOfABusyProjectIsAConflict(t *testing.T) {
	ctx := context.Background()
	m, _ := managerWithOmni(t, t.TempDir())
	if _, err := m.Add(ctx, "beta", AddOptions{}); err != nil {
		t.Fatal(err)
	}
	other, end := BeginOp(ctx)
	defer end()
	if busy, err := m.Store.LockSweep(other, "omni", m.claimFor(other)); err != nil || busy != "" {
		t.Fatalf("the other operation's lock: busy %q, %v", busy, err)
	}
	cases := []struct {
		name     string
		projects []string
		swept    []string
	}{
		{"the busy project alone", []string{"omni"}, nil},
		{"the busy project and another", []string{"beta", "omni"}, []string{"beta"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := m.Sweep(ctx, SweepOptions{Projects: c.projects})
			if err != nil {
				t.Fatal(err)
			}
			err = out.BusyError()
			var busy *SweepBusyError
			if !errors.As(err, &busy) || errkind.Of(err) != errkind.Conflict || !slices.Equal(busy.Projects, []string{"omni"}) ||
				!slices.Equal(busy.Swept, c.swept) {
				t.Fatalf("sweep of %v: %+v (%v), want a conflict naming omni, beta swept: %v", c.projects, busy, err, c.swept)
			}
			if !strings.Contains(err.Error(), `project "omni" is being swept by another operation (`+HolderOf(other)+")") ||
				!strings.Contains(errkind.HintOf(err), "wait for that sweep to end") {
				t.Errorf("conflict %q, hint %q: want the project, its holder and what to do", err, errkind.HintOf(err))
			}
			if out.SweepID == "" || len(out.Skipped) != 1 || out.Skipped[0].Project != "omni" {
				t.Errorf("outcome beside the conflict: %+v; want omni among the skipped, as storage.swept records it", out.Result)
			}
		})
	}
	out, err := m.Sweep(ctx, SweepOptions{})
	if err != nil || len(out.Skipped) != 1 || out.Skipped[0].Project != "omni" || !strings.Contains(out.Skipped[0].Reason, "another sweep") {
		t.Fatalf("sweep of every project beside a busy one: skipped %+v, %v; want omni left alone and no error", out.Skipped, err)
	}
}

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

// A deletion in flight in one goroutine (journalled pending, not yet
// confirmed) is not settled by another goroutine's doctor --fix or sweep:
// its operation is under way, as a live process's would be.
func TestInFlightDeletionNotSettledByAnotherOperation(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	m, _, x := oldCacheEntry(t, root, "sw-inflight")
	write := x.Journal
	checked := false
	x.Journal = func(jctx context.Context, p string, rec deletion.Record) error {
		if err := write(jctx, p, rec); err != nil || rec.State != "pending" {
			return err
		}
		// Between the pending record and the deletion, another goroutine
		// (no operation of its own yet) runs doctor --fix and a sweep's
		// settling of interrupted deletions.
		checked = true
		findings, err := m.Doctor(context.Background(), true)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range findings {
			if f.Kind == InterruptedDeletion {
				t.Errorf("doctor --fix took a deletion in flight for interrupted: %+v", f)
			}
		}
		sctx, end := BeginOp(context.Background())
		defer end()
		osRoot, err := os.OpenRoot(root)
		if err != nil {
			t.Fatal(err)
		}
		defer osRoot.Close()
		if n, err := m.resolvePending(sctx, osRoot); err != nil || n != 0 {
			t.Errorf("a sweep settled %d deletions in flight of another operation (%v)", n, err)
		}
		return nil
	}
	sweepCtx, end := BeginOp(ctx)
	defer end()
	lockForExecutor(t, m, sweepCtx)
	res := x.Run(sweepCtx, sweep.Plan{CacheBytes: map[string]uint64{"omni": 1 << 30},
		Evict: []sweep.Eviction{{Project: "omni", Area: area.Cache, Path: "cache/omni/old", Policy: sweep.PolicyCache}}})
	if !checked || len(res.Evicted) != 1 {
		t.Fatalf("the deletion did not go through its pending record: %+v", res)
	}
	evs, err := m.Store.Events(ctx, store.EventFilter{Type: journal.TypeEvicted})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if strings.Contains(string(e.Payload), `"recovered"`) || strings.Contains(string(e.Payload), "interrupted before") {
			t.Errorf("journal holds a settlement of the live deletion: %s", e.Payload)
		}
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

// A sweep of several projects holds one project's sweep lock at a time:
// while it works on one (a FIFO, a huge tree, a slow disk), the others can
// be swept by someone else.
func TestSweepLocksOneProjectAtATime(t *testing.T) {
	ctx := context.Background()
	m, _ := managerWithOmni(t, t.TempDir())
	if _, err := m.Add(ctx, "other", AddOptions{}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	sweepLocked = func(n string) {
		seen = append(seen, n)
		for _, p := range []string{"omni", "other"} {
			if p == n {
				continue
			}
			op, end := BeginOp(ctx)
			busy, err := m.Store.LockSweep(op, p, m.claimFor(op))
			if err != nil || busy != "" {
				t.Errorf("while sweeping %s, %s's lock: busy %q, %v; want it free", n, p, busy, err)
			}
			m.Store.UnlockSweep(op, p, HolderOf(op))
			end()
		}
	}
	defer func() { sweepLocked = nil }()
	if _, err := m.Sweep(ctx, SweepOptions{}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []string{"omni", "other", RootOwner}) {
		t.Errorf("locked %v, want each project once, then the root's inbound tree", seen)
	}
}
