package daemon

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/internal/testsupport/treetest"
	"github.com/xfsq/xfsq/journal"
)

// Run runs each due pass once per interval, on its own goroutine, journals
// under the passes' actor, warms the read cache after the round that ran
// the passes (and not on rounds that ran none), and returns nil soon after
// it is cancelled.
func TestPassesRun(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		root := r.SweepTree()
		if _, _, err := r.Manager.SetSetting(r.Ctx, "sweep_interval", "1h"); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(r.Ctx)
		defer cancel()
		done := make(chan error)
		var warmedAfter []int // storage.swept events seen by each warm
		warm := func(context.Context) error {
			warmedAfter = append(warmedAfter, len(r.Events("storage.swept")))
			return nil
		}
		go func() { done <- (&Passes{Root: r.Root, Tick: 20 * time.Millisecond, Warm: warm}).Run(ctx) }()
		deadline := time.Now().Add(30 * time.Second)
		for len(r.Events("storage.swept")) == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond) // ten ticks: none may run a pass again
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not stop when cancelled")
		}
		if len(warmedAfter) != 1 || warmedAfter[0] != 1 {
			t.Errorf("warmed with these sweeps journalled: %v, want once, after the one sweep", warmedAfter)
		}
		for _, typ := range []journal.Type{"storage.snapshot", "storage.swept"} {
			evs := r.Events(typ)
			if len(evs) != 1 || evs[0].Actor != PassActor {
				t.Errorf("%s: %+v, want one by %s", typ, evs, PassActor)
			}
		}
		if treetest.Exists(filepath.Join(root, "cache/omni/old")) || !treetest.Exists(filepath.Join(root, "projects/omni/uploads/precious.log")) {
			t.Error("the sweep pass did not sweep by policy")
		}
	})
}
