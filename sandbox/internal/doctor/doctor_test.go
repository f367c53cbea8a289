package doctor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/sandbox/internal/coretest"
	"github.com/xfsq/xfsq/sandbox/internal/snapshots"
	"github.com/xfsq/xfsq/store"
)

// An add that failed and whose rollback failed too leaves its project row
// in state adding, held by an operation that has ended: in the same
// process, the next add clears it and doctor calls it interrupted, not
// "being added by another process" until a restart.
func TestFailedAddRecoverableInProcess(t *testing.T) {
	ctx := context.Background()
	m, _ := coretest.Omni(t, t.TempDir())
	failed, end := core.BeginOp(ctx)
	if err := m.Store.InTx(ctx, func(tx *store.Tx) error {
		_, _, err := tx.InsertProject(ctx, "left", core.HolderOf(failed), time.Now())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	end() // the add returned its error
	findings, err := New(m, Projects{}, snapshots.New(m).Snapshot).Run(ctx, false)
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
	if err := coretest.Add(ctx, m, "left", core.LimitChange{}); err != nil {
		t.Fatalf("add after a failed add in the same process: %v", err)
	}
}

// A doctor made with the zero Projects (as the test above makes it) that
// reaches the repair of an interrupted add or removal reports that fix as
// failed, naming what was not handed over, and does not panic.
func TestZeroProjectsRepairFails(t *testing.T) {
	ctx := context.Background()
	m, _ := coretest.Omni(t, t.TempDir())
	if err := coretest.Add(ctx, m, "going", core.LimitChange{}); err != nil {
		t.Fatal(err)
	}
	failed, end := core.BeginOp(ctx)
	if err := m.Store.InTx(ctx, func(tx *store.Tx) error {
		if _, _, err := tx.InsertProject(ctx, "left", core.HolderOf(failed), time.Now()); err != nil {
			return err
		}
		return tx.SetProjectState(ctx, "going", store.StateRemoving, core.HolderOf(failed))
	}); err != nil {
		t.Fatal(err)
	}
	end()
	findings, err := New(m, Projects{}, snapshots.New(m).Snapshot).Run(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"left": "Projects.RollbackAdd", "going": "Projects.FinishRemove"}
	for _, f := range findings {
		if missing, ok := want[f.Project]; ok && (f.Kind == InterruptedAdd || f.Kind == InterruptedRemove) {
			if f.Fixed || !strings.Contains(f.Error, missing) {
				t.Errorf("%s of %s with the zero Projects: fixed %v, error %q; want a failed fix naming %s", f.Kind, f.Project, f.Fixed, f.Error, missing)
			}
			delete(want, f.Project)
		}
	}
	if len(want) > 0 {
		t.Errorf("no interrupted add or removal found for %v: %+v", want, findings)
	}
}
