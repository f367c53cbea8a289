package sandbox_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/sandbox"
)

// TestRemoveRespectsLeases: a project a run holds is not removed (purged
// or not) unless forced, the refusal names the run, a dry run deletes
// nothing and says how much a purge would, a forced removal is journalled
// as such, and a removal ends the project's leases, so that a project of
// the same name added later is not shielded by them.
func TestRemoveRespectsLeases(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, sandbox.WithActor(r.Ctx, "token-ci")
		r.Add(10<<20, "omni", "lapsed")
		data := filepath.Join(m.Root, "projects/omni/uploads/data")
		if err := os.WriteFile(data, make([]byte, 64<<10), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := m.AcquireLease(ctx, "omni", "run-7", time.Hour); err != nil {
			t.Fatal(err)
		}
		for _, purge := range []bool{false, true} {
			_, err := m.Remove(ctx, "omni", sandbox.RemoveOptions{Purge: purge})
			var held *sandbox.LeaseHeldError
			if !errors.As(err, &held) || errkind.Of(err) != errkind.Conflict || !strings.Contains(err.Error(), "run-7") {
				t.Fatalf("purge=%v: %v, want a conflict naming run-7", purge, err)
			}
		}
		if _, err := m.Show(ctx, "omni"); err != nil {
			t.Fatalf("the refused removal changed the project: %v", err)
		}
		// A dry run answers as the real removal would: refused, the run
		// named; forced, it says what it would delete and end.
		for _, purge := range []bool{false, true} {
			_, err := m.Remove(ctx, "omni", sandbox.RemoveOptions{Purge: purge, DryRun: true})
			var held *sandbox.LeaseHeldError
			if !errors.As(err, &held) || errkind.Of(err) != errkind.Conflict || !strings.Contains(err.Error(), "run-7") {
				t.Errorf("dry run, purge=%v: %v, want the real removal's conflict naming run-7", purge, err)
			}
		}
		res, err := m.Remove(ctx, "omni", sandbox.RemoveOptions{Purge: true, Force: true, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		var ws *sandbox.PurgePlan
		for i, p := range res.WouldPurge {
			if p.Area == area.Workspace {
				ws = &res.WouldPurge[i]
			}
		}
		if !res.DryRun || !res.Forced || ws == nil || ws.Path != "projects/omni" || ws.Bytes < 64<<10 || len(res.HeldLeases) != 1 || res.HeldLeases[0] != "run-7" {
			t.Errorf("dry run: %+v, want the workspace with its 64 KiB and the lease", res)
		}
		if _, err := os.Stat(data); err != nil {
			t.Fatalf("the dry run deleted data: %v", err)
		}
		if _, err := m.Show(ctx, "omni"); err != nil {
			t.Fatalf("the dry run removed the project: %v", err)
		}

		res, err = m.Remove(ctx, "omni", sandbox.RemoveOptions{Purge: true, Force: true})
		if err != nil || !res.Forced || len(res.EndedLeases) != 1 || res.EndedLeases[0] != "run-7" {
			t.Fatalf("forced removal: %v %+v", err, res)
		}
		if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("forced purge left the data: %v", err)
		}
		evs := r.Events("project.removed")
		var payload struct {
			Forced      bool     `json:"forced"`
			EndedLeases []string `json:"ended_leases"`
		}
		if len(evs) != 1 || json.Unmarshal(evs[0].Payload, &payload) != nil || !payload.Forced || evs[0].Actor != "token-ci" {
			t.Errorf("journal: %+v, want project.removed marked forced by token-ci", evs)
		}
		// The lease ended with the project: a new omni is not held by it.
		r.Add(10<<20, "omni")
		if ls, err := m.ProjectLeases(ctx, "omni"); err != nil || len(ls) != 0 {
			t.Errorf("leases of the new omni: %v %+v, want none", err, ls)
		}

		// A lapsed lease does not hold a project, and is ended with it.
		if _, err := m.AcquireLease(ctx, "lapsed", "old", time.Millisecond); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
		res, err = m.Remove(ctx, "lapsed", sandbox.RemoveOptions{})
		if err != nil || res.Forced || len(res.EndedLeases) != 1 {
			t.Errorf("removal with a lapsed lease: %v %+v", err, res)
		}
		if _, err := m.ProjectLeases(ctx, "lapsed"); errkind.Of(err) != errkind.NotFound {
			t.Errorf("leases of a removed project: %v, want not found", err)
		}
		if err := m.ReleaseLease(ctx, "omni", "nope"); errkind.Of(err) != errkind.NotFound {
			t.Errorf("release of a lease not held: %v, want not found", err)
		}
	})
}

// TestRemoveRacesLease: a lease taken while a removal runs either refuses
// the removal or is refused itself; never do both succeed (the project
// gone under a run that was told it holds it).
func TestRemoveRacesLease(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		for i := range 15 {
			name := fmt.Sprintf("race%d", i)
			r.Add(1<<20, name)
			var leaseErr, rmErr error
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); _, leaseErr = m.AcquireLease(ctx, name, "run-1", time.Hour) }()
			go func() { defer wg.Done(); _, rmErr = m.Remove(ctx, name, sandbox.RemoveOptions{}) }()
			wg.Wait()
			if leaseErr == nil && rmErr == nil {
				t.Fatalf("%s: both the lease and the removal succeeded", name)
			}
			if rmErr != nil && !errors.As(rmErr, new(*sandbox.LeaseHeldError)) {
				t.Fatalf("%s: removal failed otherwise: %v", name, rmErr)
			}
		}
	})
}
