package core

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/fault"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store"
)

// AddOptions are the limits of a new project; nil fields take the defaults
// (settings default_quota, default_cache_quota and default_scratch_quota
// for the hard byte limits, no soft or inode limits).
type AddOptions struct {
	Workspace, Cache, Scratch LimitChange
}

// change is the limits asked for one of area.OfProject; a new area must be given
// a field here, or it panics in every test that adds a project.
func (o AddOptions) change(a string) LimitChange {
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

// LimitChange sets the limits whose fields are non-nil.
type LimitChange struct {
	BytesSoft, BytesHard, InodesSoft, InodesHard *uint64
}

func (c LimitChange) apply(l quota.Limits) quota.Limits {
	for _, f := range []struct {
		v   *uint64
		dst *uint64
	}{{c.BytesSoft, &l.BytesSoft}, {c.BytesHard, &l.BytesHard}, {c.InodesSoft, &l.InodesSoft}, {c.InodesHard, &l.InodesHard}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	return l
}

func (c LimitChange) empty() bool {
	return c.BytesSoft == nil && c.BytesHard == nil && c.InodesSoft == nil && c.InodesHard == nil
}

func validateLimits(area string, l quota.Limits) error {
	if l.BytesSoft != 0 && l.BytesHard != 0 && l.BytesSoft > l.BytesHard {
		return inputErrorf("%s: the soft byte limit (%d) is above the hard limit (%d)", area, l.BytesSoft, l.BytesHard)
	}
	if l.InodesSoft != 0 && l.InodesHard != 0 && l.InodesSoft > l.InodesHard {
		return inputErrorf("%s: the soft inode limit (%d) is above the hard limit (%d)", area, l.InodesSoft, l.InodesHard)
	}
	return nil
}

// checkLimits is validateLimits plus what the filesystem can hold: ext4's
// quota file keeps smaller limits than XFS, and the kernel's own refusal
// (ERANGE) names neither the limit nor the maximum.
func (m *Manager) checkLimits(area string, l quota.Limits) error {
	if err := validateLimits(area, l); err != nil {
		return err
	}
	if m.xfs == nil {
		return nil
	}
	if err := m.xfs.CheckLimits(l); err != nil {
		return errkind.WithHint(errkind.Input, &InputError{Param: "limits", Msg: area + ": " + err.Error()},
			"give a smaller limit, or 0 for none")
	}
	return nil
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
func (m *Manager) Add(ctx context.Context, name string, o AddOptions) (Project, error) {
	ctx, end := BeginOp(ctx)
	defer end()
	if err := ValidateName(name); err != nil {
		return Project{}, err
	}
	keys := make([]string, 0, len(area.OfProject))
	for _, a := range area.OfProject {
		keys = append(keys, areaDefaultQuota[a])
	}
	defaults, err := m.settingsOf(ctx, keys...) // one read for every area's
	if err != nil {
		return Project{}, err
	}
	limits := map[string]quota.Limits{}
	for _, a := range area.OfProject { // in order: the first bad limit is the one named
		l := quota.Limits{BytesHard: defaults[areaDefaultQuota[a]].Bytes()} // as defaultLimits
		limits[a] = o.change(a).apply(l)
		if err := m.checkLimits(a, limits[a]); err != nil {
			return Project{}, err
		}
	}
	excluded, err := m.excludedIDs()
	if err != nil {
		return Project{}, err
	}
	// The project's row, its trees' IDs and rows, in one transaction: each
	// commit is a wait for the disk (three more made an add's time).
	var trees []store.Tree
	created := m.now()
	err = m.claim(ctx, name, created, func(tx *store.Tx) (err error) {
		trees, err = m.recordTrees(ctx, tx, name, limits, excluded)
		return err
	})
	if err != nil {
		return Project{}, err
	}
	fault.Point("add:project-row")
	for _, t := range trees {
		fault.Point("add:" + t.Area + ":id-recorded")
	}
	var walks []store.WalkRecord
	for _, t := range trees {
		if err = m.placeTree(t); err != nil {
			break
		}
		if m.xfs == nil { // the fallback's admission starts from a walk; XFS counts in the kernel
			var w store.WalkRecord
			if w, err = m.measureNew(t); err != nil {
				break
			}
			walks = append(walks, w)
		}
	}
	if err == nil {
		fault.Point("add:before-ready")
		err = m.Store.InTx(ctx, func(tx *store.Tx) error {
			// The new trees' walks are their baselines, recorded with the
			// project made ready: no write through xfsq reaches a project
			// being added, so none was in flight.
			if err := tx.SetBaselines(ctx, walks); err != nil {
				return err
			}
			if err := tx.SetProjectState(ctx, name, store.StateReady, ""); err != nil {
				return err
			}
			return tx.AppendEvent(ctx, name, m.actor(ctx), addedPayload(m.BackendName(), trees))
		})
	}
	if err != nil {
		if _, rbErr := m.rollbackAdd(ctx, name); rbErr != nil {
			return Project{}, rollbackFailed(err, rbErr)
		}
		return Project{}, err
	}
	p, err := m.added(ctx, name, created, trees)
	p.Warnings = overLimits(p)
	return p, err
}

// added is the answer to an add, as Show would read it back just after,
// built from what the add holds: its row and trees as the store keeps them
// (the time to the microsecond, the trees in the store's order), each
// tree's usage read as Show reads it. It saves the project's re-read (and
// the read cache's probe) on every add.
func (m *Manager) added(ctx context.Context, name string, created time.Time, trees []store.Tree) (Project, error) {
	trees = slices.Clone(trees)
	slices.SortFunc(trees, func(a, b store.Tree) int {
		return cmp.Or(strings.Compare(a.Project, b.Project), strings.Compare(a.Area, b.Area))
	})
	statuses, err := m.status(ctx, trees, nil, Read{})
	if err != nil {
		return Project{}, err
	}
	return Project{Name: name, State: store.StateReady, CreatedAt: store.AsStored(created), Backend: m.BackendInfo(), Trees: statuses}, nil
}

// doctorFix is what an operator does about an add left half-way;
// runDoctor about a project in a state that the doctor explains.
var (
	doctorFix = errkind.Fix("run %s", errkind.Do(errkind.OpDoctor, "", "fix", ""))
	runDoctor = errkind.Fix("run %s", errkind.Do(errkind.OpDoctor, ""))
)

// rollbackFailed is an add that failed and could not be undone: the kind
// of what failed, and the repair as the hint.
func rollbackFailed(err, rbErr error) error {
	return errkind.WithFix(errkind.Of(err), fmt.Errorf("%w (and rolling back failed: %v)", err, rbErr), doctorFix)
}

// claim inserts the project row in state adding, and runs then in the
// same transaction, rolling back first the leftovers of an add whose
// process died.
func (m *Manager) claim(ctx context.Context, name string, created time.Time, then func(*store.Tx) error) error {
	for attempt := 0; ; attempt++ {
		var existing store.Project
		var inserted bool
		err := m.Store.InTx(ctx, func(tx *store.Tx) error {
			var err error
			if existing, inserted, err = tx.InsertProject(ctx, name, HolderOf(ctx), created); err != nil || !inserted {
				return err
			}
			return then(tx)
		})
		switch {
		case err != nil:
			return err
		case inserted:
			return nil
		case existing.State == store.StateReady:
			return errkind.WithFix(errkind.Conflict, fmt.Errorf("project %q %w", name, ErrExists), errkind.Fix("see %s", errkind.Do(errkind.OpProjectShow, name)))
		case m.holderLive(ctx, existing.Adder):
			return fmt.Errorf("project %q is being %s by another process (%s); wait for it", name,
				map[string]string{store.StateAdding: "added", store.StateRemoving: "removed"}[existing.State], existing.Adder)
		case existing.State == store.StateRemoving:
			return errkind.WithFix(errkind.Conflict, fmt.Errorf("project %q %w, half-removed by an interrupted removal", name, ErrExists),
				errkind.Fix("run %s again to finish it", errkind.Do(errkind.OpProjectRemove, name)))
		case attempt > 0:
			return errkind.WithFix(errkind.NotReady, fmt.Errorf("project %q: could not clear an interrupted add", name), doctorFix)
		}
		// An add that died half-way: undo it, then try again.
		if _, err := m.rollbackAdd(ctx, name); err != nil {
			return fmt.Errorf("project %q: rolling back an interrupted add: %w", name, err)
		}
	}
}

// defaultLimits are the limits a new tree of area gets: its area's default
// hard byte limit (areaDefaultQuota), nothing else.
func (m *Manager) defaultLimits(ctx context.Context, area string) (quota.Limits, error) {
	def, err := m.setting(ctx, areaDefaultQuota[area])
	if err != nil {
		return quota.Limits{}, err
	}
	return quota.Limits{BytesHard: def.Bytes()}, nil
}

// recordTrees reserves each area's tree's ID and records its row, in
// the caller's transaction: before any directory is made, so that a
// rollback finds what to undo. The IDs and rows of every area go in one
// statement each (a few round trips, not a few a tree).
func (m *Manager) recordTrees(ctx context.Context, tx *store.Tx, name string, limits map[string]quota.Limits, excluded map[quota.ProjectID]bool) ([]store.Tree, error) {
	return m.recordTreesOf(ctx, tx, name, area.OfProject, limits, excluded)
}

// recordTree reserves one tree's ID and records its row in tx.
func (m *Manager) recordTree(ctx context.Context, tx *store.Tx, name, a string, limits quota.Limits, excluded map[quota.ProjectID]bool) (store.Tree, error) {
	trees, err := m.recordTreesOf(ctx, tx, name, []string{a}, map[string]quota.Limits{a: limits}, excluded)
	if err != nil {
		return store.Tree{}, err
	}
	return trees[0], nil
}

// recordTreesOf is recordTrees of the areas named.
func (m *Manager) recordTreesOf(ctx context.Context, tx *store.Tx, name string, areas []string, limits map[string]quota.Limits, excluded map[quota.ProjectID]bool) ([]store.Tree, error) {
	trees := make([]store.Tree, 0, len(areas))
	owners := make([]string, 0, len(areas))
	for _, a := range areas {
		rel := area.TreePath(name, a)
		dir := m.abs(rel)
		_, statErr := os.Lstat(dir)
		if statErr == nil { // an existing one is adopted with what it holds
			if err := checkAdoptable(dir); err != nil {
				return nil, err
			}
		}
		trees = append(trees, store.Tree{Project: name, Area: a, Path: rel, Backend: m.BackendName(), FSUUID: m.fsUUID,
			Limits: limits[a], CreatedDir: errors.Is(statErr, os.ErrNotExist)})
		owners = append(owners, name+"/"+a)
	}
	ids, err := tx.ReserveIDs(ctx, m.fsUUID, m.Range, excluded, owners)
	if err != nil {
		return nil, err
	}
	for i := range trees {
		trees[i].ProjectID = ids[i]
	}
	return trees, tx.InsertTrees(ctx, trees)
}

// makeTree makes one tree of a project that has the others (the doctor's
// repair): ID and row in one transaction, then the directory (an existing
// one is adopted with what it holds), the kernel's ID and limits, and on
// the fallback its baseline. The tree is returned with its ID once one
// was recorded, for the caller to undo.
func (m *Manager) makeTree(ctx context.Context, name, a string, limits quota.Limits) (store.Tree, error) {
	excluded, err := m.excludedIDs()
	if err != nil {
		return store.Tree{}, err
	}
	var tree store.Tree
	err = m.Store.InTx(ctx, func(tx *store.Tx) (err error) {
		tree, err = m.recordTree(ctx, tx, name, a, limits, excluded)
		return err
	})
	if err != nil {
		tree.ProjectID = 0 // nothing recorded
		return tree, err
	}
	fault.Point("add:" + a + ":id-recorded")
	if err := m.placeTree(tree); err != nil {
		return tree, err
	}
	if m.xfs == nil {
		_, err = m.baseline(ctx, tree, 0)
	}
	return tree, err
}

// placeTree makes a recorded tree's directory (and its skeleton), then
// the kernel's ID and limits.
func (m *Manager) placeTree(tree store.Tree) error {
	a, dir := tree.Area, m.abs(tree.Path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	for _, sub := range area.Skeleton(a) {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return fmt.Errorf("create %s: %w", filepath.Join(dir, sub), err)
		}
	}
	fault.Point("add:" + a + ":dir-created")
	// On the fallback the record is the assignment and holds the limits:
	// its Assign and SetLimits only read back the tree's row, which the
	// caller has just committed (two round trips a tree for nothing).
	kernel := m.xfs != nil
	if kernel {
		if err := m.Backend.Assign(dir, tree.ProjectID); err != nil {
			return err
		}
	}
	fault.Point("add:" + a + ":assigned")
	if kernel {
		if err := m.Backend.SetLimits(tree.ProjectID, tree.Limits); err != nil {
			return err
		}
	}
	fault.Point("add:" + a + ":limits-set")
	return nil
}

// measureNew walks a new fallback tree: its baseline, to record.
func (m *Manager) measureNew(tree store.Tree) (store.WalkRecord, error) {
	start := m.now().Truncate(time.Microsecond) // as the store keeps it
	u, seen, err := m.measureTree(tree, nil)
	return store.WalkRecord{Snapshot: store.Snapshot{Project: tree.Project, Area: tree.Area},
		Baseline: &store.WalkBaseline{Usage: u, Walk: store.WalkAt(start), Seen: seen}}, err
}

// checkAdoptable refuses to adopt an existing path that is not a plain directory.
func checkAdoptable(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s exists and is not a directory (%s); move it away first", dir, fi.Mode().Type())
	}
	return nil
}

func (m *Manager) excludedIDs() (map[quota.ProjectID]bool, error) {
	if m.alloc == nil {
		return nil, nil
	}
	return m.alloc.Excluded()
}

// rollbackAdd undoes a partial add: limits cleared, directories it created
// removed if still empty (never any data), IDs released once the kernel
// shows them empty, rows deleted. It returns what it left behind.
func (m *Manager) rollbackAdd(ctx context.Context, name string) (left []string, err error) {
	trees, err := m.Store.Trees(ctx, name)
	if err != nil {
		return nil, err
	}
	for _, t := range trees {
		if err := m.Backend.Clear(t.ProjectID); err != nil {
			return nil, err
		}
		if t.CreatedDir {
			left = append(left, removeEmptyTree(m.abs(t.Path), t.Area)...)
		}
	}
	used, err := m.idsStillUsed(trees)
	if err != nil {
		return left, err
	}
	err = m.Store.InTx(ctx, func(tx *store.Tx) error {
		for _, t := range trees {
			if err := releaseOrKeep(ctx, tx, t, used[t.ProjectID], "rolled-back:"+name+"/"+t.Area); err != nil {
				return err
			}
		}
		return tx.DeleteProject(ctx, name)
	})
	return left, err
}

// addMissingTree gives a ready project its tree of area, or leaves no
// trace of trying.
func (m *Manager) addMissingTree(ctx context.Context, name, area string) error {
	limits, err := m.defaultLimits(ctx, area)
	if err != nil {
		return err
	}
	tree, err := m.makeTree(ctx, name, area, limits)
	if err == nil || tree.ProjectID == 0 {
		return err
	}
	if clearErr := m.Backend.Clear(tree.ProjectID); clearErr != nil {
		return fmt.Errorf("%w (and clearing its limits failed: %v)", err, clearErr)
	}
	if tree.CreatedDir {
		removeEmptyTree(m.abs(tree.Path), area)
	}
	used, usedErr := m.idsStillUsed([]store.Tree{tree})
	if usedErr != nil {
		return fmt.Errorf("%w (and undoing it failed: %v)", err, usedErr)
	}
	if undoErr := m.Store.InTx(ctx, func(tx *store.Tx) error {
		if err := releaseOrKeep(ctx, tx, tree, used[tree.ProjectID], "rolled-back:"+name+"/"+area); err != nil {
			return err
		}
		return tx.DeleteTree(ctx, name, area)
	}); undoErr != nil {
		return fmt.Errorf("%w (and undoing it failed: %v)", err, undoErr)
	}
	return err
}

// removeEmptyTree removes a tree that xfsq created, only as far as it is
// empty; it reports what it had to leave.
func removeEmptyTree(dir, a string) (left []string) {
	for _, sub := range area.Skeleton(a) {
		if err := os.Remove(filepath.Join(dir, sub)); err != nil && !errors.Is(err, os.ErrNotExist) {
			left = append(left, filepath.Join(dir, sub))
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		left = append(left, dir)
	}
	return left
}

// idsStillUsed asks the kernel which of the trees' IDs still own data,
// giving deleted inodes a moment to drain. Outside any transaction: the wait
// must not hold the database's write lock.
func (m *Manager) idsStillUsed(trees []store.Tree) (map[quota.ProjectID]bool, error) {
	used := map[quota.ProjectID]bool{}
	if m.xfs == nil {
		return used, nil
	}
	for _, t := range trees {
		q, err := m.xfs.WaitEmpty(t.ProjectID, inodegcWait)
		if err != nil {
			return nil, err
		}
		used[t.ProjectID] = q.OwnsData()
	}
	return used, nil
}

// releaseOrKeep returns a tree's ID to the pool, or, while files still carry
// it, keeps it reserved under keepOwner so that no other project is given it.
func releaseOrKeep(ctx context.Context, tx *store.Tx, t store.Tree, used bool, keepOwner string) error {
	if used {
		return tx.SetIDOwner(ctx, t.FSUUID, t.ProjectID, keepOwner)
	}
	return tx.ReleaseID(ctx, t.FSUUID, t.ProjectID)
}

// inodegcWait bounds how long a removal waits for the kernel to let go of
// the inodes it just deleted before keeping an ID reserved instead.
const inodegcWait = 3 * time.Second
