package retention

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
	"github.com/xfsq/xfsq/internal/testsupport/threadtest"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/sandbox/internal/coretest"
	"github.com/xfsq/xfsq/sandbox/internal/settingwrites"
	"github.com/xfsq/xfsq/sandbox/internal/snapshots"

	// Only this test links doctor: it holds two use cases against one
	// deletion in flight (the import rules are of the library's imports).
	"github.com/xfsq/xfsq/sandbox/internal/doctor"
	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/sweep"
)

// sweeperWithOmni is coretest.Omni's root with its sweeper.
func sweeperWithOmni(t *testing.T, root string) (*Sweeper, *core.Manager) {
	t.Helper()
	m, _ := coretest.Omni(t, root)
	return New(m, snapshots.New(m).Snapshot), m
}

// Two sweeps of one project in one process: while one holds the project's
// sweep lock, the other is turned away as a sweep of another process would
// be, instead of taking the lock as its own.
func TestSweepLockIsPerOperation(t *testing.T) {
	ctx := context.Background()
	s, m := sweeperWithOmni(t, t.TempDir())
	first, end := core.BeginOp(ctx)
	defer end()
	busy, err := m.Store.LockSweep(first, "omni", m.ClaimFor(first))
	if err != nil || busy != "" {
		t.Fatalf("first sweep's lock: busy %q, %v", busy, err)
	}
	out, err := s.Sweep(ctx, SweepOptions{Projects: []string{"omni"}})
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
	out, err = s.Sweep(ctx, SweepOptions{Projects: []string{"omni"}})
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
	s, m := sweeperWithOmni(t, t.TempDir())
	if err := coretest.Add(ctx, m, "beta", core.LimitChange{}); err != nil {
		t.Fatal(err)
	}
	other, end := core.BeginOp(ctx)
	defer end()
	if busy, err := m.Store.LockSweep(other, "omni", m.ClaimFor(other)); err != nil || busy != "" {
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
			out, err := s.Sweep(ctx, SweepOptions{Projects: c.projects})
			if err != nil {
				t.Fatal(err)
			}
			err = out.BusyError()
			var busy *SweepBusyError
			if !errors.As(err, &busy) || errkind.Of(err) != errkind.Conflict || !slices.Equal(busy.Projects, []string{"omni"}) ||
				!slices.Equal(busy.Swept, c.swept) {
				t.Fatalf("sweep of %v: %+v (%v), want a conflict naming omni, beta swept: %v", c.projects, busy, err, c.swept)
			}
			if !strings.Contains(err.Error(), `project "omni" is being swept by another operation (`+core.HolderOf(other)+")") ||
				!strings.Contains(errkind.HintOf(err), "wait for that sweep to end") {
				t.Errorf("conflict %q, hint %q: want the project, its holder and what to do", err, errkind.HintOf(err))
			}
			if out.SweepID == "" || len(out.Skipped) != 1 || out.Skipped[0].Project != "omni" {
				t.Errorf("outcome beside the conflict: %+v; want omni among the skipped, as storage.swept records it", out.Result)
			}
		})
	}
	out, err := s.Sweep(ctx, SweepOptions{})
	if err != nil || len(out.Skipped) != 1 || out.Skipped[0].Project != "omni" || !strings.Contains(out.Skipped[0].Reason, "another sweep") {
		t.Fatalf("sweep of every project beside a busy one: skipped %+v, %v; want omni left alone and no error", out.Skipped, err)
	}
}

// A sweep of several projects holds one project's sweep lock at a time:
// while it works on one (a FIFO, a huge tree, a slow disk), the others can
// be swept by someone else.
func TestSweepLocksOneProjectAtATime(t *testing.T) {
	ctx := context.Background()
	s, m := sweeperWithOmni(t, t.TempDir())
	if err := coretest.Add(ctx, m, "other", core.LimitChange{}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	sweepLocked = func(n string) {
		seen = append(seen, n)
		for _, p := range []string{"omni", "other"} {
			if p == n {
				continue
			}
			op, end := core.BeginOp(ctx)
			busy, err := m.Store.LockSweep(op, p, m.ClaimFor(op))
			if err != nil || busy != "" {
				t.Errorf("while sweeping %s, %s's lock: busy %q, %v; want it free", n, p, busy, err)
			}
			m.Store.UnlockSweep(op, p, core.HolderOf(op))
			end()
		}
	}
	defer func() { sweepLocked = nil }()
	if _, err := s.Sweep(ctx, SweepOptions{}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []string{"omni", "other", core.RootOwner}) {
		t.Errorf("locked %v, want each project once, then the root's inbound tree", seen)
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
		findings, err := doctor.New(m, doctor.Projects{}, snapshots.New(m).Snapshot).Run(context.Background(), true) // no add or removal to repair
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range findings {
			if f.Kind == doctor.InterruptedDeletion {
				t.Errorf("doctor --fix took a deletion in flight for interrupted: %+v", f)
			}
		}
		sctx, end := core.BeginOp(context.Background())
		defer end()
		dir, err := saferm.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		defer dir.Close()
		if n, err := m.ResolvePending(sctx, dir); err != nil || n != 0 {
			t.Errorf("a sweep settled %d deletions in flight of another operation (%v)", n, err)
		}
		return nil
	}
	sweepCtx, end := core.BeginOp(ctx)
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

// A lease taken after the executor's own look at the lease, just before
// the pending record is written, still stops the deletion: the record is
// written only in a transaction that finds no lease.
func TestSweepLeaseTakenBeforeThePendingRecord(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	m, entry, x := oldCacheEntry(t, root, "sw-test")
	look := x.Leased
	x.Leased = func(ctx context.Context, p string) (bool, error) {
		leased, err := look(ctx, p)
		// The run's lease lands right after the executor looked.
		if lerr := coretest.AcquireLease(ctx, m, p, "late-run", time.Hour); lerr != nil {
			t.Fatal(lerr)
		}
		return leased, err
	}
	lockForExecutor(t, m, ctx)
	res := x.Run(ctx, sweep.Plan{CacheBytes: map[string]uint64{"omni": 1 << 30},
		Evict: []sweep.Eviction{{Project: "omni", Area: area.Cache, Path: "cache/omni/old", Policy: sweep.PolicyCache}}})
	if _, err := os.Stat(entry); err != nil || len(res.Evicted) != 0 {
		t.Fatalf("the entry of a project leased before its pending record was deleted: %+v", res)
	}
	if len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0].Reason, "leased since planning") {
		t.Errorf("skipped: %+v; want the lease named", res.Skipped)
	}
	if pending, _ := m.Store.PendingEvictions(ctx); len(pending) != 0 {
		t.Errorf("a pending record was written for the leased project: %+v", pending)
	}
}

// oldCacheEntry makes a root with project omni holding one cache entry,
// cache/omni/old, 90 days old, and the sweep executor that would delete it.
// lockForExecutor takes omni's sweep lock for ctx's operation, as a sweep
// does before its executor runs: a deletion is journalled only under it.
func lockForExecutor(t *testing.T, m *core.Manager, ctx context.Context) {
	t.Helper()
	if busy, err := m.Store.LockSweep(ctx, "omni", m.ClaimFor(ctx)); err != nil || busy != "" {
		t.Fatalf("sweep lock: busy %q, %v", busy, err)
	}
}

func oldCacheEntry(t *testing.T, root, sweepID string) (*core.Manager, string, *sweep.Executor) {
	t.Helper()
	s, m := sweeperWithOmni(t, root)
	entry := filepath.Join(root, "cache", "omni", "old")
	if err := os.MkdirAll(entry, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(entry, "f"), make([]byte, 4096), 0o644)
	long := time.Now().Add(-90 * 24 * time.Hour)
	os.Chtimes(filepath.Join(entry, "f"), long, long)
	os.Chtimes(entry, long, long)
	r, err := saferm.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	policy, err := s.Policy(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return m, entry, s.executor(sweepID, r, policy, 0)
}

// A scheduled pass (the ticker, `snapshot --all`) walks at nice 10 and idle
// I/O priority; a snapshot someone asked for does not. Either way, and
// after a sweep, the caller's thread and every other thread of the process
// keep their priority: a server's request handlers must not slow down
// because a background pass ran.
func TestScheduledPassWalksInTheBackground(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	class, nice := threadtest.Priority(t)
	root := t.TempDir()
	s, m := sweeperWithOmni(t, root)
	for _, c := range []struct {
		scheduled         bool
		wantClass, wantNi int
	}{{true, 3, 10}, {false, class, nice}} {
		var walkClass, walkNice int
		walk := inventory.Options{Progress: func(inventory.Progress) { walkClass, walkNice = threadtest.Priority(t) }}
		if _, err := snapshots.New(m).Snapshot(context.Background(), core.SnapshotOptions{Projects: []string{"omni"}, Scheduled: c.scheduled, Walk: walk}); err != nil {
			t.Fatal(err)
		}
		if walkClass != c.wantClass || walkNice != c.wantNi {
			t.Errorf("scheduled %v: walked at I/O class %d, nice %d; want %d, %d", c.scheduled, walkClass, walkNice, c.wantClass, c.wantNi)
		}
	}
	old := filepath.Join(root, "cache", "omni", "old")
	os.MkdirAll(old, 0o755)
	long := time.Now().Add(-90 * 24 * time.Hour)
	os.Chtimes(old, long, long)
	if _, _, err := settingwrites.New(m).SetSetting(context.Background(), "cache_quota_per_project", "1"); err != nil {
		t.Fatal(err)
	}
	out, err := s.Sweep(context.Background(), SweepOptions{Background: true})
	if err != nil || len(out.Evicted) != 1 {
		t.Fatalf("background sweep: %+v, %v", out.Evicted, err)
	}
	if c, n := threadtest.Priority(t); c != class || n != nice {
		t.Errorf("after the passes the caller's thread has I/O class %d, nice %d; want %d, %d", c, n, class, nice)
	}
	lowered := threadtest.Lingering(nice, 5*time.Second)
	if len(lowered) > 0 {
		t.Errorf("threads %v kept a background pass's priority after it ended", lowered)
	}
}

// A tenant's FUSE mount whose server never answers, in its workspace's
// trash and in its cache, stops neither a sweep of every project nor a
// snapshot pass: both finish, the mount points left protected, and the
// neighbour's trees are walked.
func TestPassesNeverWaitOnAStalledFUSE(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, m := sweeperWithOmni(t, root)
	if err := coretest.Add(ctx, m, "neighbour", core.LimitChange{}); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{area.TreePath("omni", area.Workspace) + "/node_modules", area.TreePath("omni", area.Cache) + "/entry"} {
		p := filepath.Join(root, dir)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		mounttest.StalledFUSE(t, p)
	}
	for _, canClone := range []bool{true, false} {
		if !canClone {
			core.CannotClone(t)
		}
		done := make(chan error, 2)
		go func() {
			_, err := s.Sweep(ctx, SweepOptions{DryRun: true})
			done <- err
		}()
		go func() {
			snaps, err := snapshots.New(m).Snapshot(ctx, core.SnapshotOptions{})
			if err == nil && len(snaps) < 4 {
				err = fmt.Errorf("%d trees walked", len(snaps))
			}
			done <- err
		}()
		for range 2 {
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("clone=%v: %v", canClone, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("clone=%v: a pass waited on the stalled FUSE server", canClone)
			}
		}
	}
}

// A sweep moves the version of a project it deleted in once, as it ends
// the project (store.EndSweep), not once a deletion: the journalling of a
// deletion's settled record leaves it (the ledger credit after it may move
// it, when the files are older than the sweep's walk by more than the
// ctime lag: that is the credit's, measured apart), and the end of the
// project moves it — the overview sees the paths gone once the sweep is
// done with the project.
func TestSweepMovesTheVersionOncePerProject(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, m := sweeperWithOmni(t, root)
	long := time.Now().Add(-90 * 24 * time.Hour)
	for _, name := range []string{"old-a", "old-b"} {
		p := filepath.Join(root, "cache", "omni", name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, long, long)
	}
	if _, _, err := settingwrites.New(m).SetSetting(ctx, "cache_quota_per_project", "1"); err != nil {
		t.Fatal(err)
	}
	versions := func() int64 {
		mark, err := m.Store.ChangeMark(ctx)
		if err != nil {
			t.Error(err)
		}
		return mark.Versions
	}
	var settling, settled []int64 // the versions' sum just before and after each confirmation
	evictionSettling = func(string, deletion.Record) { settling = append(settling, versions()) }
	evictionSettled = func(string, deletion.Record) { settled = append(settled, versions()) }
	t.Cleanup(func() { evictionSettling, evictionSettled = nil, nil })
	out, err := s.Sweep(ctx, SweepOptions{Projects: []string{"omni"}})
	if err != nil || len(out.Evicted) != 2 || len(settled) != 2 {
		t.Fatalf("sweep: %+v, %v, %d confirmations; want two deletions", out.Evicted, err, len(settled))
	}
	for i := range settled {
		if moved := settled[i] - settling[i]; moved != 0 {
			t.Errorf("confirming deletion %d moved the versions by %d; want 0", i+1, moved)
		}
	}
	// At least once: the last deletion's credit, if any, comes after its
	// confirmation too.
	if atEnd := versions() - settled[1]; atEnd < 1 {
		t.Errorf("the versions moved by %d after the last confirmation, as the sweep ended the project; want a move", atEnd)
	}
}
