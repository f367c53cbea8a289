package doctor

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/journal"

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

// Doctor finds an add interrupted; before its repair runs, another
// process rolls that add back and adds the name afresh. The repair leaves
// the new project whole (its row, trees, IDs and directories) and says
// it did nothing, journalling no repair.
func TestRepairOfAnAddReplacedMeanwhile(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		m, _ := coretest.OmniOn(t, t.TempDir(), dsn)
		rollback := coretest.RollbackAdd(m)
		dead, end := core.BeginOp(ctx)
		if err := m.Store.InTx(ctx, func(tx *store.Tx) error {
			_, _, err := tx.InsertProject(ctx, "left", core.HolderOf(dead), time.Now())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		end()
		d := New(m, Projects{RollbackAdd: rollback}, snapshots.New(m).Snapshot)
		dctx, dend := core.BeginOp(ctx)
		defer dend()
		findings, err := d.diagnose(dctx)
		if err != nil {
			t.Fatal(err)
		}
		// Another process, between doctor's look and its repair.
		seen, err := m.Store.Project(ctx, "left")
		if err != nil {
			t.Fatal(err)
		}
		other, endOther := core.BeginOp(ctx)
		if _, err := rollback(other, seen); err != nil {
			t.Fatalf("the other process's rollback: %v", err)
		}
		endOther()
		if err := coretest.Add(ctx, m, "left", core.LimitChange{}); err != nil {
			t.Fatalf("the name added afresh: %v", err)
		}
		before := recordOf(t, m, "left")
		if err := d.repair(dctx, findings); err != nil {
			t.Fatal(err)
		}
		var repaired []Finding
		for _, f := range findings {
			if f.Project == "left" && f.Kind == InterruptedAdd {
				repaired = append(repaired, f)
			}
		}
		if len(repaired) != 1 || repaired[0].Fixed || !strings.Contains(repaired[0].Error, "no longer the interrupted add") {
			t.Errorf("the repair of an add replaced meanwhile: %+v, want one, not fixed, saying the add is no longer there", repaired)
		}
		if after := recordOf(t, m, "left"); !reflect.DeepEqual(after, before) {
			t.Errorf("the project added afresh, after doctor's repair of the add before it:\n got %+v\nwant %+v", after, before)
		}
		evs, err := m.Store.Events(ctx, store.EventFilter{Project: "left", Type: journal.TypeRepaired})
		if err != nil || len(evs) != 0 {
			t.Errorf("doctor.repaired journalled for a repair that did nothing: %+v %v", evs, err)
		}
	})
}

// record is what a repair must leave of a project it does not own: its
// row, its trees, the IDs registered and which directories exist.
type record struct {
	Row   store.Project
	Trees []store.Tree
	IDs   []store.IDRecord
	Dirs  []bool
}

func recordOf(t *testing.T, m *core.Manager, name string) record {
	t.Helper()
	ctx := context.Background()
	var r record
	var err error
	if r.Row, err = m.Store.Project(ctx, name); err != nil {
		t.Fatal(err)
	}
	if r.Trees, err = m.Store.Trees(ctx, name); err != nil || len(r.Trees) == 0 {
		t.Fatalf("trees of %s: %v %v", name, r.Trees, err)
	}
	if r.IDs, err = m.Store.IDs(ctx, m.FSUUID()); err != nil {
		t.Fatal(err)
	}
	for _, tr := range r.Trees {
		_, err := os.Stat(filepath.Join(m.Root, tr.Path))
		r.Dirs = append(r.Dirs, err == nil)
	}
	return r
}
