package lifecycle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/fault"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/store"
)

// AddOptions are the limits of a new project; nil fields take the defaults
// (settings default_quota, default_cache_quota and default_scratch_quota
// for the hard byte limits, no soft or inode limits).
type AddOptions struct {
	Workspace, Cache, Scratch core.LimitChange
}

// change is the limits asked for one of area.OfProject; a new area must be given
// a field here, or it panics in every test that adds a project.
func (o AddOptions) change(a string) core.LimitChange {
	switch a {
	case area.Workspace:
		return o.Workspace
	case area.Cache:
		return o.Cache
	case area.Scratch:
		return o.Scratch
	}
	panic("project: AddOptions has no limits for area " + a)
}

// AddFaultPoints are where tests kill `project add` to show that an
// interrupted add leaves nothing behind that the next add or doctor --fix
// does not clean up.
var AddFaultPoints = func() []string {
	points := []string{"add:project-row"}
	for _, a := range area.OfProject {
		for _, step := range []string{"id-recorded", "dir-created", "assigned", "limits-set"} {
			points = append(points, "add:"+a+":"+step)
		}
	}
	return append(points, "add:before-ready")
}()

// Add registers a project: one tree per area, each with its own project ID
// and limits, and journals it. A failure half-way rolls back what it made;
// a process killed half-way leaves an "adding" row that the next Add of the
// same name, or Doctor with fix, rolls back.
func (l *Lifecycle) Add(ctx context.Context, name string, o AddOptions) (core.Project, error) {
	ctx, end := core.BeginOp(ctx)
	defer end()
	if err := core.ValidateName(name); err != nil {
		return core.Project{}, err
	}
	excluded, err := l.ExcludedIDs()
	if err != nil {
		return core.Project{}, err
	}
	// The project's row, its trees' IDs and rows, in one transaction: each
	// commit is a wait for the disk (three more made an add's time).
	created := l.Now()
	trees, grace, err := l.claim(ctx, name, created, o, excluded)
	if err != nil {
		return core.Project{}, err
	}
	fault.Point("add:project-row")
	for _, t := range trees {
		fault.Point("add:" + t.Area + ":id-recorded")
	}
	reads, err := l.place(ctx, name, created, trees)
	if err != nil {
		own := store.Project{Name: name, State: store.StateAdding, CreatedAt: created, Adder: core.HolderOf(ctx)}
		if _, rbErr := l.RollbackAdd(ctx, own); rbErr != nil {
			return core.Project{}, rollbackFailed(err, rbErr)
		}
		return core.Project{}, err
	}
	p, err := l.added(ctx, name, created, trees, reads, grace)
	p.Warnings = core.OverLimits(p)
	return p, err
}

// added is the answer to an add, as Show would read it back just after,
// built from what the add holds: its row and trees as the store keeps them
// (the time to the microsecond, the trees in the store's order), each
// tree's usage as Show reads it: on the fallback as read with the add's
// last write (reads, of trees in their order), on XFS from the kernel. It
// saves the project's re-read (and the read cache's probe) on every add.
func (l *Lifecycle) added(ctx context.Context, name string, created time.Time, trees []store.Tree, reads []store.TreeRead, grace time.Duration) (core.Project, error) {
	type read struct {
		tree store.Tree
		read store.TreeRead
	}
	byTree := make([]read, len(trees))
	for i, t := range trees {
		byTree[i].tree = t
		if reads != nil {
			byTree[i].read = reads[i]
		}
	}
	slices.SortFunc(byTree, func(a, b read) int {
		return cmp.Or(strings.Compare(a.tree.Project, b.tree.Project), strings.Compare(a.tree.Area, b.tree.Area))
	})
	trees = each(byTree, func(r read) store.Tree { return r.tree })
	var statuses []core.TreeStatus
	if l.IsXFS() {
		var err error
		if statuses, err = l.Status(ctx, trees, nil, core.Read{}); err != nil {
			return core.Project{}, err
		}
	} else {
		statuses = l.StatusOfReads(trees, each(byTree, func(r read) store.TreeRead { return r.read }), grace)
	}
	return core.Project{Name: name, State: store.StateReady, CreatedAt: store.AsStored(created), Backend: l.BackendInfo(), Trees: statuses}, nil
}

// limitsOf is each area's limits for a new project: its default, changed
// as o asks, checked in area order (the first bad limit is the one named);
// and soft_grace, for the add's answer; all from stored, the settings the
// add read with its locks.
func (l *Lifecycle) limitsOf(stored core.StoredSettings, o AddOptions) (map[string]quota.Limits, time.Duration, error) {
	keys := make([]string, 0, len(area.OfProject)+1)
	for _, a := range area.OfProject {
		keys = append(keys, core.DefaultQuotaSetting(a))
	}
	values, err := stored.Of(append(keys, "soft_grace")...)
	if err != nil {
		return nil, 0, err
	}
	limits := map[string]quota.Limits{}
	for _, a := range area.OfProject {
		lim := quota.Limits{BytesHard: values[core.DefaultQuotaSetting(a)].Bytes()} // as the core's defaultLimits
		limits[a] = o.change(a).Apply(lim)
		if err := l.CheckLimits(a, limits[a]); err != nil {
			return nil, 0, err
		}
	}
	return limits, values["soft_grace"].Duration(), nil
}

// place makes the recorded trees' directories, kernel IDs and limits (on
// the fallback, their walks), then makes the project ready with the walks
// as baselines and journals project.added, at once (Store.MakeReady). It
// returns the fallback's trees as read at that moment, in their order.
//
// Each tree is placed only while this process's lease has held since the
// add's row was recorded (claimed): paused past it, the add may have been
// taken over and rolled back, and the name added afresh with the same
// paths, whose directories it must not tag with its own IDs or limits.
func (l *Lifecycle) place(ctx context.Context, name string, claimed time.Time, trees []store.Tree) ([]store.TreeRead, error) {
	for _, t := range trees {
		if l.beforePlace != nil {
			l.beforePlace()
		}
		if err := l.Store.LeaseHeldSince(claimed); err != nil {
			return nil, fmt.Errorf("project %q: placing its %s tree: %w", name, t.Area, err)
		}
		if err := l.PlaceTree(t); err != nil {
			return nil, err
		}
	}
	var walks []store.WalkRecord
	if !l.IsXFS() { // the fallback's admission starts from a walk; XFS counts in the kernel
		var err error
		if walks, err = l.MeasureNew(trees...); err != nil {
			return nil, err
		}
	}
	fault.Point("add:before-ready")
	// The new trees' walks are their baselines, recorded with the project
	// made ready: no write through xfsq reaches a project being added, so
	// none was in flight.
	return l.Store.MakeReady(ctx, name, core.HolderOf(ctx), l.ActorOf(ctx), walks, addedPayload(l.BackendName(), trees))
}

// doctorFix is what an operator does about an add left half-way.
var doctorFix = errkind.Fix("run %s", errkind.Do(errkind.OpDoctor, "", "fix", ""))

// rollbackFailed is an add that failed and could not be undone: the kind
// of what failed, and the repair as the hint.
func rollbackFailed(err, rbErr error) error {
	return errkind.WithFix(errkind.Of(err), fmt.Errorf("%w (and rolling back failed: %v)", err, rbErr), doctorFix)
}

// claim records the project row in state adding and its trees' IDs and
// rows, with the limits o asks for, in one transaction (RecordProject),
// rolling back first the leftovers of an add whose process died; it
// returns the trees recorded and soft_grace, read with them.
func (l *Lifecycle) claim(ctx context.Context, name string, created time.Time, o AddOptions, excluded map[quota.ProjectID]bool) ([]store.Tree, time.Duration, error) {
	var grace time.Duration
	limits := func(stored core.StoredSettings) (limits map[string]quota.Limits, err error) {
		limits, grace, err = l.limitsOf(stored, o)
		return limits, err
	}
	for attempt := 0; ; attempt++ {
		var trees []store.Tree
		var existing store.Project
		var inserted bool
		err := l.Store.InTx(ctx, func(tx *store.Tx) (err error) {
			trees, existing, inserted, err = l.RecordProject(ctx, tx, name, core.HolderOf(ctx), created, limits, excluded)
			return err
		})
		switch {
		case err != nil:
			return nil, 0, err
		case inserted:
			return trees, grace, nil
		case existing.State == store.StateReady:
			return nil, 0, errkind.WithFix(errkind.Conflict, fmt.Errorf("project %q %w", name, core.ErrExists), errkind.Fix("see %s", errkind.Do(errkind.OpProjectShow, name)))
		case l.HolderLive(ctx, existing.Adder):
			return nil, 0, fmt.Errorf("project %q is being %s by another process (%s); wait for it", name,
				map[string]string{store.StateAdding: "added", store.StateRemoving: "removed"}[existing.State], existing.Adder)
		case existing.State == store.StateRemoving:
			return nil, 0, errkind.WithFix(errkind.Conflict, fmt.Errorf("project %q %w, half-removed by an interrupted removal", name, core.ErrExists),
				errkind.Fix("run %s again to finish it", errkind.Do(errkind.OpProjectRemove, name)))
		case attempt > 0:
			return nil, 0, errkind.WithFix(errkind.NotReady, fmt.Errorf("project %q: could not clear an interrupted add", name), doctorFix)
		}
		// An add that died half-way: undo it, then try again. The rollback
		// decides under the name's lock: if the row is no longer that add's
		// (its holder made it ready, another process rolled it back or
		// added the name afresh) or its holder is not gone after all, it
		// does nothing, and the next attempt sees what is there now.
		if _, err := l.RollbackAdd(ctx, existing); err != nil && !errors.Is(err, store.ErrAddChanged) {
			return nil, 0, fmt.Errorf("project %q: rolling back an interrupted add: %w", name, err)
		}
	}
}

// RollbackAdd undoes a partial add, seen as its row was read when it was
// judged dead (or the caller's own add that failed): limits cleared,
// directories it created removed if still empty (never any data), IDs
// released once the kernel shows them empty, rows deleted. It returns
// what it left behind.
//
// Processes that each judged the same add dead must not each undo it:
// the last would undo a project added afresh meanwhile, whose IDs (often
// the same numbers) and directories (the same paths) it would take for
// the dead add's. So it decides under the project name's lock, the one
// every add of the name takes (Tx.TakeOverAdd): when the row is no longer
// seen's add or its holder is not gone, it does nothing and says so
// (store.ErrAddChanged, errkind.Conflict). Else, in that transaction, the
// row is handed to this operation, and the limits and directories are
// undone under the lock, so nothing of another add's is touched even by
// a rollback judged dead while it runs; the row, held, keeps every add of
// the name out until the rows are deleted, last, again only if this
// operation still holds it. The kernel's wait for the IDs comes between,
// outside any transaction: it must not hold the database's write lock.
func (l *Lifecycle) RollbackAdd(ctx context.Context, seen store.Project) (left []string, err error) {
	c := l.ClaimFor(ctx)
	var trees []store.Tree
	err = l.Store.InTx(ctx, func(tx *store.Tx) (err error) {
		takenAt := time.Now()
		if trees, err = tx.TakeOverAdd(ctx, seen, c); err != nil {
			return err
		}
		left, err = l.undoTrees(takenAt, trees)
		return err
	})
	if errors.Is(err, store.ErrAddChanged) {
		return nil, errkind.New(errkind.Conflict, fmt.Errorf("%w; nothing rolled back", err))
	}
	if err != nil {
		return left, err
	}
	if l.rollbackUndone != nil {
		l.rollbackUndone()
	}
	used, err := l.IDsStillUsed(trees)
	if err != nil {
		return left, err
	}
	err = l.Store.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.EndRollbackAdd(ctx, seen.Name, c.Holder); err != nil {
			return err
		}
		for _, t := range trees {
			if err := core.ReleaseOrKeep(ctx, tx, t, used[t.ProjectID], "rolled-back:"+seen.Name+"/"+t.Area); err != nil {
				return err
			}
		}
		return tx.DeleteProject(ctx, seen.Name)
	})
	if errors.Is(err, store.ErrAddChanged) {
		err = errkind.New(errkind.Conflict, err)
	}
	return left, err
}

// undoTrees clears the limits of a rolled-back add's trees and removes
// the directories it made, as far as they are empty, under the name's
// lock taken at takenAt. Unless this process's lease lapsed since then:
// paused past it, its transaction may have been ended under it and the
// name added afresh, with the same IDs and paths.
func (l *Lifecycle) undoTrees(takenAt time.Time, trees []store.Tree) (left []string, err error) {
	if err := l.Store.LeaseHeldSince(takenAt); err != nil {
		return nil, err
	}
	for _, t := range trees {
		if err := l.Backend.Clear(t.ProjectID); err != nil {
			return left, err
		}
		if t.CreatedDir {
			left = append(left, core.RemoveEmptyTree(l.Root, t.Path, t.Area)...)
		}
	}
	return left, nil
}
