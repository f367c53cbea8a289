package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/internal/testsupport/threadtest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// oldCache writes n cache entries of omni, each 4 KiB and a month old.
func oldCache(t *testing.T, r *fixture.Root, name string, n int) []string {
	t.Helper()
	var paths []string
	when := time.Now().Add(-30 * 24 * time.Hour)
	for i := range n {
		rel := fmt.Sprintf("cache/%s/e%02d", name, i)
		dir := filepath.Join(r.Manager.Root, rel)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 4096), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(filepath.Join(dir, "f"), when, when)
		os.Chtimes(dir, when, when)
		paths = append(paths, rel)
	}
	return paths
}

func set(t *testing.T, r *fixture.Root, key, value string) {
	t.Helper()
	if _, _, err := r.Manager.SetSetting(r.Ctx, key, value); err != nil {
		t.Fatal(err)
	}
}

// A scheduled pass writes exactly one event, and not again until its
// interval has passed; the sweep pass is off until sweep_interval is set.
func TestPassWritesOneEvent(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<30, "omni", "beta")
		m := r.Manager
		for i := range 2 {
			if out, err := m.RunPass(r.Ctx, sandbox.PassSnapshot); err != nil {
				t.Fatal(err)
			} else if out.Ran != (i == 0) || (i == 0 && len(out.Snapshots) != 2*len(area.OfProject)+1) { // and the inbound tree
				t.Errorf("snapshot pass %d: %+v", i, out)
			}
		}
		snaps := r.Events(journal.TypeSnapshot)
		if len(snaps) != 1 || strings.Count(string(snaps[0].Payload), `"project"`) != 2*len(area.OfProject)+1 {
			t.Fatalf("storage.snapshot events after two passes within the hour: %+v", snaps)
		}
		out, err := m.RunPass(r.Ctx, sandbox.PassSnapshot)
		if err != nil || out.Ran || !strings.Contains(out.Why, "not due") || time.Until(out.NextAt) < 59*time.Minute {
			t.Errorf("a pass not due: %+v %v", out, err)
		}

		if out, err := m.RunPass(r.Ctx, sandbox.PassSweep); err != nil || out.Ran || !strings.Contains(out.Why, "sweep_interval is 0") {
			t.Errorf("the sweep pass by default: %+v %v", out, err)
		}
		set(t, r, "cache_quota_per_project", "1k")
		oldCache(t, r, "omni", 2)
		set(t, r, "sweep_interval", "6h")
		for range 2 {
			if _, err := m.RunPass(r.Ctx, sandbox.PassSweep); err != nil {
				t.Fatal(err)
			}
		}
		if swept := r.Events(journal.TypeSwept); len(swept) != 1 || !strings.Contains(string(swept[0].Payload), `"evicted_entries":2`) {
			t.Errorf("storage.swept after two sweep passes within the interval: %d events, first %s", len(swept), payloadOf(swept))
		}
		if _, err := m.RunPass(r.Ctx, "nope"); errkind.Of(err) != errkind.Input {
			t.Errorf("an unknown pass: %v", err)
		}
	})
}

// Two processes' passes (two Managers on one store) never work on one
// project at once: while one runs, the other's pass is not claimed, and a
// sweep asked for meanwhile is a Conflict; the first ends with one event.
func TestPassesExcludeEachOther(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<30, "omni")
		set(t, r, "cache_quota_per_project", "1k")
		set(t, r, "sweep_interval", "1h")
		oldCache(t, r, "omni", 3)
		other := r.Reopen().Manager
		for _, c := range []struct {
			pass  string
			event journal.Type
			hook  func(func())
		}{
			{sandbox.PassSnapshot, journal.TypeSnapshot, func(f func()) {
				sandbox.OnSnapshotTree(t, func(context.Context, store.Tree) { f() })
			}},
			{sandbox.PassSweep, journal.TypeSwept, func(f func()) {
				sandbox.OnEvictionSettled(t, func(string, deletion.Record) { f() })
			}},
		} {
			started, release := make(chan struct{}), make(chan struct{})
			var mu sync.Mutex
			entries := 0
			c.hook(func() {
				mu.Lock()
				entries++
				first := entries == 1
				mu.Unlock()
				if first {
					close(started)
					<-release
				}
			})
			done := make(chan error)
			go func() { _, err := r.Manager.RunPass(r.Ctx, c.pass); done <- err }()
			<-started
			out, err := other.RunPass(r.Ctx, c.pass)
			if err != nil || out.Ran || !strings.Contains(out.Why, "being run by") {
				t.Errorf("%s: a second pass beside a running one: %+v %v", c.pass, out, err)
			}
			if c.pass == sandbox.PassSweep {
				if _, err := other.Sweep(r.Ctx, sandbox.SweepOptions{Projects: []string{"omni"}, Exclusive: true}); errkind.Of(err) != errkind.Conflict {
					t.Errorf("a sweep of omni beside the pass sweeping it: %v, want a conflict", err)
				}
			}
			mu.Lock()
			if entries != 1 {
				t.Errorf("%s: %d entries began while the first pass held its first: the second pass worked too", c.pass, entries)
			}
			mu.Unlock()
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if evs := r.Events(c.event); len(evs) != 1 {
				t.Errorf("%s: %d %s events, want 1", c.pass, len(evs), c.event)
			}
			sandbox.OnSnapshotTree(t, nil)
			sandbox.OnEvictionSettled(t, nil)
		}
	})
}

// A cancelled pass (SIGTERM) stops between entries: what it finished is
// stored or journalled whole, nothing after it starts, it journals no pass
// event, and the next RunPass runs it again at once.
func TestPassCancelledStopsBetweenEntries(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<30, "omni", "beta")
		set(t, r, "cache_quota_per_project", "1k")
		set(t, r, "sweep_interval", "1h")
		paths := oldCache(t, r, "omni", 4)
		m := r.Manager

		ctx, cancel := context.WithCancel(r.Ctx)
		walks := 0
		sandbox.OnSnapshotTree(t, func(context.Context, store.Tree) { walks++; cancel() })
		if _, err := m.RunPass(ctx, sandbox.PassSnapshot); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled snapshot pass: %v", err)
		}
		stored := 0
		keys := []store.TreeKey{{Project: sandbox.RootOwner, Area: area.Inbound}}
		for _, n := range []string{"omni", "beta"} {
			for _, a := range area.OfProject {
				keys = append(keys, store.TreeKey{Project: n, Area: a})
			}
		}
		for _, k := range keys {
			if _, ok, _ := sandbox.TestStore(m).LatestSnapshot(r.Ctx, k); ok {
				stored++
			}
		}
		if walks != 1 || stored != 1 || len(r.Events(journal.TypeSnapshot)) != 0 {
			t.Errorf("cancelled at the first of 4 trees: %d walks started, %d stored, %d events; want 1, 1, 0", walks, stored, len(r.Events(journal.TypeSnapshot)))
		}
		sandbox.OnSnapshotTree(t, nil)
		if out, err := m.RunPass(r.Ctx, sandbox.PassSnapshot); err != nil || !out.Ran || len(r.Events(journal.TypeSnapshot)) != 1 {
			t.Errorf("the pass after a cancelled one: %+v %v", out, err)
		}

		ctx, cancel = context.WithCancel(r.Ctx)
		sandbox.OnEvictionSettled(t, func(string, deletion.Record) { cancel() })
		if _, err := m.RunPass(ctx, sandbox.PassSweep); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled sweep pass: %v", err)
		}
		gone := 0
		for _, p := range paths {
			if _, err := os.Lstat(filepath.Join(m.Root, p)); err != nil {
				gone++
			}
		}
		pending, _ := sandbox.TestStore(m).PendingEvictions(r.Ctx)
		if gone != 1 || len(pending) != 0 || len(r.Events(journal.TypeSwept)) != 0 {
			t.Errorf("cancelled after the first of 4 deletions: %d gone, %d pending, %d swept events; want 1, 0, 0", gone, len(pending), len(r.Events(journal.TypeSwept)))
		}
		sandbox.OnEvictionSettled(t, nil)
		if out, err := m.RunPass(r.Ctx, sandbox.PassSweep); err != nil || !out.Ran || len(out.Sweep.Evicted) != 3 {
			t.Errorf("the sweep pass after a cancelled one: %+v %v", out, err)
		}
	})
}

// A pass runs at background priority on threads of its own; the caller's
// thread, and after the pass every other thread, keep theirs (a server's
// request handlers must not slow down because a pass ran).
func TestPassRunsInTheBackground(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	class, nice := threadtest.Priority(t)
	r := fixture.New(t, "sqlite", filepath.Join(t.TempDir(), "xfsq.db"))
	r.Add(1<<30, "omni")
	set(t, r, "cache_quota_per_project", "1k")
	set(t, r, "sweep_interval", "1h")
	oldCache(t, r, "omni", 1)
	var during [][2]int
	sandbox.OnSnapshotTree(t, func(context.Context, store.Tree) {
		c, n := threadtest.Priority(t)
		during = append(during, [2]int{c, n})
	})
	sandbox.OnEvictionSettled(t, func(string, deletion.Record) { c, n := threadtest.Priority(t); during = append(during, [2]int{c, n}) })
	for _, p := range sandbox.Passes {
		if out, err := r.Manager.RunPass(r.Ctx, p); err != nil || !out.Ran {
			t.Fatalf("%s: %+v %v", p, out, err)
		}
	}
	if len(during) != len(area.OfProject)+2 { // every tree walked (the inbound tree too), one entry deleted
		t.Fatalf("hooks ran %d times, want %d", len(during), len(area.OfProject)+2)
	}
	for _, d := range during {
		if d != [2]int{3, 10} {
			t.Errorf("a pass worked at I/O class %d, nice %d; want idle (3), 10", d[0], d[1])
		}
	}
	if c, n := threadtest.Priority(t); c != class || n != nice {
		t.Errorf("after the passes the caller's thread has I/O class %d, nice %d; want %d, %d", c, n, class, nice)
	}
	lowered := threadtest.Lingering(nice, 5*time.Second)
	if len(lowered) > 0 {
		t.Errorf("threads %v kept a pass's priority after it ended", lowered)
	}
}

func payloadOf(evs []sandbox.Event) string {
	if len(evs) == 0 {
		return "none"
	}
	return string(evs[0].Payload)
}
