package lifecycle

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/store"
)

// The rollback of an add left half-way, against every unlucky timeline:
// processes that each judged the same add dead, a name added afresh
// between one's look and its rollback, an add still under way. The
// interleavings are driven step by step in one process, each "process"
// an operation of its own (core.BeginOp), on each store driver.

// rollbackRoot is a fallback root on dsn's store and its lifecycle.
func rollbackRoot(t *testing.T, dsn string) (*Lifecycle, context.Context) {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	st, err := store.Open(ctx, dsn, "host-a")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m, _, err := core.Init(ctx, core.Options{Root: root, Store: st, ProjectFiles: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return New(m), ctx
}

// halfAdd records an add of name and makes its trees' directories, as a
// process killed before it made the project ready leaves it, under a new
// operation; it returns the row and the function that ends the operation
// (the process dies).
func halfAdd(t *testing.T, l *Lifecycle, ctx context.Context, name string) (store.Project, func()) {
	t.Helper()
	op, end := core.BeginOp(ctx)
	trees, _, err := l.claim(op, name, l.Now(), AddOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range trees {
		if err := l.PlaceTree(tr); err != nil {
			t.Fatal(err)
		}
	}
	p, err := l.Store.Project(ctx, name)
	if err != nil || p.State != store.StateAdding {
		t.Fatalf("the half-done add of %s: %+v %v", name, p, err)
	}
	return p, end
}

// deadAdd is halfAdd of a process that died there.
func deadAdd(t *testing.T, l *Lifecycle, ctx context.Context, name string) store.Project {
	t.Helper()
	p, end := halfAdd(t, l, ctx, name)
	end()
	if l.HolderLive(ctx, p.Adder) {
		t.Fatalf("the holder of a dead add (%s) is taken as live", p.Adder)
	}
	return p
}

// rollback is RollbackAdd of seen by an operation of its own.
func rollback(l *Lifecycle, ctx context.Context, seen store.Project) ([]string, error) {
	op, end := core.BeginOp(ctx)
	defer end()
	return l.RollbackAdd(op, seen)
}

// projectState is what a later rollback must leave of a project: its
// row, its trees (their IDs), the IDs registered and its directories.
type projectState struct {
	Row   store.Project
	Trees []store.Tree
	IDs   []store.IDRecord
	Dirs  map[string]bool
}

func stateOf(t *testing.T, l *Lifecycle, ctx context.Context, name string) projectState {
	t.Helper()
	var s projectState
	var err error
	if s.Row, err = l.Store.Project(ctx, name); err != nil {
		t.Fatal(err)
	}
	if s.Trees, err = l.Store.Trees(ctx, name); err != nil {
		t.Fatal(err)
	}
	if len(s.Trees) == 0 {
		t.Fatalf("project %s has no trees", name)
	}
	if s.IDs, err = l.Store.IDs(ctx, s.Trees[0].FSUUID); err != nil {
		t.Fatal(err)
	}
	s.Dirs = map[string]bool{}
	for _, tr := range s.Trees {
		_, err := os.Stat(filepath.Join(l.Root, tr.Path))
		s.Dirs[tr.Path] = err == nil
	}
	return s
}

func checkUntouched(t *testing.T, l *Lifecycle, ctx context.Context, name string, want projectState) {
	t.Helper()
	if got := stateOf(t, l, ctx, name); !reflect.DeepEqual(got, want) {
		t.Errorf("project %s changed under a rollback of an add it is not:\n got %+v\nwant %+v", name, got, want)
	}
}

// B and C both find A's add dead. B rolls it back and D adds the name
// afresh; C's rollback, coming last, must leave D's project whole: its
// row, its IDs (the same numbers as A's, released by B and handed out
// again), its trees and their directories (the same paths as A's).
func TestStaleRollbackLeavesANewAddAlone(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		l, ctx := rollbackRoot(t, dsn)
		seen := deadAdd(t, l, ctx, "omni") // what B and C both saw
		if _, err := rollback(l, ctx, seen); err != nil {
			t.Fatalf("B's rollback: %v", err)
		}
		if _, err := l.Add(ctx, "omni", AddOptions{}); err != nil {
			t.Fatalf("D's add after B's rollback: %v", err)
		}
		d := stateOf(t, l, ctx, "omni")
		_, err := rollback(l, ctx, seen)
		if !errors.Is(err, store.ErrAddChanged) {
			t.Errorf("C's rollback of an add rolled back and replaced since: %v, want store.ErrAddChanged", err)
		}
		checkUntouched(t, l, ctx, "omni", d)
	})
}

// C's stale rollback while D's add of the name is still under way (its
// row adding, its directories made, not yet ready) leaves D's add alone.
func TestStaleRollbackLeavesAnAddUnderWayAlone(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		l, ctx := rollbackRoot(t, dsn)
		seen := deadAdd(t, l, ctx, "omni")
		if _, err := rollback(l, ctx, seen); err != nil {
			t.Fatalf("B's rollback: %v", err)
		}
		_, endD := halfAdd(t, l, ctx, "omni")
		defer endD()
		d := stateOf(t, l, ctx, "omni")
		if _, err := rollback(l, ctx, seen); !errors.Is(err, store.ErrAddChanged) {
			t.Errorf("C's rollback of an add replaced by one under way: %v, want store.ErrAddChanged", err)
		}
		checkUntouched(t, l, ctx, "omni", d)
	})
}

// A rollback decides on the holder's liveness under the name's lock, not
// on its caller's earlier look: an add whose operation still runs is not
// rolled back by another.
func TestRollbackRefusesAnAddUnderWay(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		l, ctx := rollbackRoot(t, dsn)
		seen, end := halfAdd(t, l, ctx, "omni")
		defer end()
		a := stateOf(t, l, ctx, "omni")
		if _, err := rollback(l, ctx, seen); !errors.Is(err, store.ErrAddChanged) {
			t.Errorf("another operation's rollback of an add under way: %v, want store.ErrAddChanged", err)
		}
		checkUntouched(t, l, ctx, "omni", a)
	})
}

// B and C roll back the same dead add at once: one does it, the other
// finds it done and does nothing.
func TestRollbacksOfOneAddRaceToOne(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		l, ctx := rollbackRoot(t, dsn)
		seen := deadAdd(t, l, ctx, "omni")
		errs := make(chan error, 2)
		for range 2 {
			go func() { _, err := rollback(l, ctx, seen); errs <- err }()
		}
		var done, changed int
		for range 2 {
			switch err := <-errs; {
			case err == nil:
				done++
			case errors.Is(err, store.ErrAddChanged):
				changed++
			default:
				t.Errorf("rollback: %v", err)
			}
		}
		if done != 1 || changed != 1 {
			t.Errorf("two rollbacks of one add: %d did it, %d found it changed; want one each", done, changed)
		}
		if _, err := l.Store.Project(ctx, "omni"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("after the rollbacks: %v, want the project gone", err)
		}
	})
}

// The rollback holds the name from its decision until its rows are gone:
// once it has removed the dead add's directories, and until it deletes
// its rows, an add of the name is refused (it would make the same paths
// and be handed the same IDs) and a rollback that saw the dead add does
// nothing; once it is done the name is free.
func TestRollbackHoldsTheNameUntilItsRowsAreGone(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		l, ctx := rollbackRoot(t, dsn)
		seen := deadAdd(t, l, ctx, "omni")
		ran := false
		l.rollbackUndone = func() {
			ran = true
			for _, d := range []string{"projects/omni", "cache/omni", "scratch/omni"} {
				if _, err := os.Stat(filepath.Join(l.Root, d)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s once the rollback has undone the trees: %v, want it removed", d, err)
				}
			}
			taken := stateOf(t, l, ctx, "omni")
			if _, err := l.Add(ctx, "omni", AddOptions{}); err == nil {
				t.Error("an add of the name succeeded while a rollback of it was under way")
			}
			if _, err := rollback(l, ctx, seen); !errors.Is(err, store.ErrAddChanged) {
				t.Errorf("a second rollback while the first runs: %v, want store.ErrAddChanged", err)
			}
			checkUntouched(t, l, ctx, "omni", taken)
		}
		if _, err := rollback(l, ctx, seen); err != nil {
			t.Fatalf("rollback: %v", err)
		}
		if !ran {
			t.Fatal("the rollback never reached its hook")
		}
		l.rollbackUndone = nil
		if _, err := l.Add(ctx, "omni", AddOptions{}); err != nil {
			t.Errorf("add after the rollback: %v", err)
		}
	})
}

// A rollback taken for dead while it runs (B: its operation ended, as a
// process's whose lease lapsed) is taken over by C, which finishes it,
// and D adds the name afresh. B, going on, finds the row no longer its
// rollback's and leaves D's project whole: no ID released, no row deleted.
func TestRollbackTakenOverLeavesTheNewAddAlone(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		l, ctx := rollbackRoot(t, dsn)
		seen := deadAdd(t, l, ctx, "omni")
		var d projectState
		l.rollbackUndone = func() {
			l.rollbackUndone = nil
			held, err := l.Store.Project(ctx, "omni") // held by B, gone
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rollback(l, ctx, held); err != nil {
				t.Fatalf("C's takeover of B's rollback: %v", err)
			}
			if _, err := l.Add(ctx, "omni", AddOptions{}); err != nil {
				t.Fatalf("D's add after C's rollback: %v", err)
			}
			d = stateOf(t, l, ctx, "omni")
		}
		b, end := core.BeginOp(ctx)
		end()
		if _, err := l.RollbackAdd(b, seen); !errors.Is(err, store.ErrAddChanged) {
			t.Errorf("B's rollback, taken over and the name added afresh meanwhile: %v, want store.ErrAddChanged", err)
		}
		if d.Row.Name == "" {
			t.Fatal("the rollback never reached its hook")
		}
		checkUntouched(t, l, ctx, "omni", d)
	})
}

// An add paused past its lease between recording its row and placing its
// trees (where another process may take it for dead, roll it back and add
// the name afresh at the same paths) places nothing when it resumes, and
// says why.
func TestAddPausedPastItsLeasePlacesNothing(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		l, ctx := rollbackRoot(t, dsn)
		l.Store.SetLiveness(store.Liveness{Process: store.ProcessOf(core.HolderOf(ctx)), Machine: "boot-a", Heartbeat: time.Hour, Expiry: 1500 * time.Millisecond})
		l.beforePlace = func() {
			l.beforePlace = nil
			time.Sleep(1600 * time.Millisecond) // past the lease: no heartbeat renews it within the hour
		}
		_, err := l.Add(ctx, "omni", AddOptions{})
		var lapsed *store.LeaseLapsedError
		if !errors.As(err, &lapsed) {
			t.Fatalf("add paused past its lease: %v, want the lease lapsed", err)
		}
		trees, err := l.Store.Trees(ctx, "omni")
		if err != nil || len(trees) == 0 {
			t.Fatalf("the add's recorded trees: %+v %v", trees, err)
		}
		for _, tr := range trees {
			if _, err := os.Lstat(l.abs(tr.Path)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: placed after the lease lapsed (%v)", tr.Path, err)
			}
		}
	})
}
