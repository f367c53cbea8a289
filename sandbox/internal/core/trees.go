package core

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/fault"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store"
)

// LimitChange sets the limits whose fields are non-nil.
type LimitChange struct {
	BytesSoft, BytesHard, InodesSoft, InodesHard *uint64
}

// Apply is l with the limits c sets.
func (c LimitChange) Apply(l quota.Limits) quota.Limits {
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

// CheckLimits is validateLimits plus what the filesystem can hold: ext4's
// quota file keeps smaller limits than XFS, and the kernel's own refusal
// (ERANGE) names neither the limit nor the maximum.
func (m *Manager) CheckLimits(area string, l quota.Limits) error {
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

// doctorFix is what an operator does about an add left half-way;
// runDoctor about a project in a state that the doctor explains.
var (
	doctorFix = errkind.Fix("run %s", errkind.Do(errkind.OpDoctor, "", "fix", ""))
	runDoctor = errkind.Fix("run %s", errkind.Do(errkind.OpDoctor, ""))
)

// defaultLimits are the limits a new tree of area gets: its area's default
// hard byte limit (areaDefaultQuota), nothing else.
func (m *Manager) defaultLimits(ctx context.Context, area string) (quota.Limits, error) {
	def, err := m.setting(ctx, areaDefaultQuota[area])
	if err != nil {
		return quota.Limits{}, err
	}
	return quota.Limits{BytesHard: def.Bytes()}, nil
}

// recordTree reserves one tree's ID and records its row in tx.
func (m *Manager) recordTree(ctx context.Context, tx *store.Tx, name, a string, limits quota.Limits, excluded map[quota.ProjectID]bool) (store.Tree, error) {
	trees, err := m.recordTreesOf(ctx, tx, name, []string{a}, map[string]quota.Limits{a: limits}, excluded)
	if err != nil {
		return store.Tree{}, err
	}
	return trees[0], nil
}

// recordTreesOf reserves the areas' trees' IDs and records their rows, in
// the caller's transaction: before any directory is made, so that a
// rollback finds what to undo.
func (m *Manager) recordTreesOf(ctx context.Context, tx *store.Tx, name string, areas []string, limits map[string]quota.Limits, excluded map[quota.ProjectID]bool) ([]store.Tree, error) {
	trees, err := m.planTrees(name, areas, limits)
	if err != nil {
		return nil, err
	}
	owners := make([]string, 0, len(areas))
	for _, t := range trees {
		owners = append(owners, name+"/"+t.Area)
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

// planTrees are the rows of the areas' trees of project name, without
// their IDs: an existing directory is adopted with what it holds (a path
// that is not one is refused), a missing one is to be made. The paths are
// looked at as a removal looks, through no symlink and into no mount: a
// tenant may have made one and mounted a filesystem on it whose server
// never answers, and the caller holds the add's lock.
func (m *Manager) planTrees(name string, areas []string, limits map[string]quota.Limits) ([]store.Tree, error) {
	root, err := saferm.Open(m.Root)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	trees := make([]store.Tree, 0, len(areas))
	for _, a := range areas {
		rel := area.TreePath(name, a)
		missing, err := adoptable(root, rel, m.abs(rel))
		if err != nil {
			return nil, err
		}
		trees = append(trees, store.Tree{Project: name, Area: a, Path: rel, Backend: m.BackendName(), FSUUID: m.fsUUID,
			Limits: limits[a], CreatedDir: missing})
	}
	return trees, nil
}

// RecordProject records a new project (in state adding, held by adder)
// and its trees with their IDs and rows, in the caller's transaction,
// before any directory is made, so that a rollback finds what to undo:
// the name's and the IDs' locks first, with the settings limits makes
// the trees' limits of (one statement), then the directories looked at,
// then the rows, in one statement on PostgreSQL (store.Tx.AddProject).
// When the name is taken it records nothing and returns the existing row.
func (m *Manager) RecordProject(ctx context.Context, tx *store.Tx, name, adder string, created time.Time, limits func(StoredSettings) (map[string]quota.Limits, error), excluded map[quota.ProjectID]bool) (trees []store.Tree, existing store.Project, inserted bool, err error) {
	stored, err := tx.LockAdd(ctx, name, m.fsUUID)
	if err != nil {
		return nil, store.Project{}, false, err
	}
	byArea, err := limits(stored)
	if err != nil {
		return nil, store.Project{}, false, err
	}
	planned, err := m.planTrees(name, area.OfProject, byArea)
	if err != nil {
		// A taken name is refused as taken, whatever is at its paths.
		if p, perr := tx.Project(ctx, name); perr == nil {
			return nil, p, false, nil
		}
		return nil, store.Project{}, false, err
	}
	return tx.AddProject(ctx, store.NewProject{Name: name, Adder: adder, Created: created, Trees: planned,
		FSKey: m.fsUUID, Range: m.Range, Excluded: excluded})
}

// makeTree makes one tree of a project that has the others (the doctor's
// repair): ID and row in one transaction, then the directory (an existing
// one is adopted with what it holds), the kernel's ID and limits, and on
// the fallback its baseline. The tree is returned with its ID once one
// was recorded, for the caller to undo.
func (m *Manager) makeTree(ctx context.Context, name, a string, limits quota.Limits) (store.Tree, error) {
	excluded, err := m.ExcludedIDs()
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
	if err := m.PlaceTree(tree); err != nil {
		return tree, err
	}
	if m.xfs == nil {
		_, err = m.baseline(ctx, tree, 0)
	}
	return tree, err
}

// PlaceTree makes a recorded tree's directory (and its skeleton), then
// the kernel's ID and limits.
func (m *Manager) PlaceTree(tree store.Tree) error {
	a, dir := tree.Area, m.abs(tree.Path)
	if err := makeDirs(m.Root, tree.Path, area.Skeleton(a)); err != nil {
		return err
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

// MeasureNew walks new fallback trees: their baselines, to record, in
// their order (treewalk's MeasureTrees, the root opened once).
func (m *Manager) MeasureNew(trees ...store.Tree) ([]store.WalkRecord, error) {
	start := m.now().Truncate(time.Microsecond) // as the store keeps it; before every walk
	measures, err := m.walks().MeasureTrees(trees)
	if err != nil {
		return nil, err
	}
	walks := make([]store.WalkRecord, len(trees))
	for i, tree := range trees {
		walks[i] = store.WalkRecord{Snapshot: store.Snapshot{Project: tree.Project, Area: tree.Area},
			Baseline: &store.WalkBaseline{Usage: measures[i].Usage, Walk: store.WalkAt(start), Seen: measures[i].Seen}}
	}
	return walks, nil
}

// TreeLook is what stands at a tree's path as the root's filesystem
// holds it.
type TreeLook struct {
	Missing bool // nothing there
	// Mounted: another filesystem is mounted on it or on the way to it (a
	// tenant's container's mount that reached the host, say).
	Mounted bool
	Stat    saferm.Stat // what is there, when neither
}

// LookAtTree looks at the tree rel beneath root as a removal looks:
// through no symlink and into no mount, whose server (a tenant's FUSE)
// may never answer. err is any other failure, a symlink on the way
// included.
func LookAtTree(root *saferm.Dir, rel string) (TreeLook, error) {
	st, err := root.Lstat(rel)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return TreeLook{Missing: true}, nil
	case errors.Is(err, saferm.ErrOtherMount) || err == nil && st.OtherMount:
		return TreeLook{Mounted: true}, nil
	case err != nil:
		return TreeLook{}, err
	}
	return TreeLook{Stat: st}, nil
}

// adoptable tells whether the tree rel (dir, as the operator knows it) is
// missing, and refuses to adopt an existing path that is not a plain
// directory of the root's filesystem.
func adoptable(root *saferm.Dir, rel, dir string) (missing bool, err error) {
	look, err := LookAtTree(root, rel)
	switch {
	case err != nil:
		return false, fmt.Errorf("%s: %w", dir, err)
	case look.Mounted:
		return false, fmt.Errorf("%s: another filesystem is mounted on it or on the way to it; unmount it (umount -l %s) before adding the project", dir, dir)
	case !look.Missing && !look.Stat.IsDir():
		return false, fmt.Errorf("%s exists and is not a directory (it is %s); move it away first", dir, area.FileKind(look.Stat.Mode))
	}
	return look.Missing, nil
}

// ExcludedIDs are the IDs named in the project files (none on the
// fallback): never handed out.
func (m *Manager) ExcludedIDs() (map[quota.ProjectID]bool, error) {
	if m.alloc == nil {
		return nil, nil
	}
	return m.alloc.Excluded()
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
		RemoveEmptyTree(m.Root, tree.Path, area)
	}
	used, usedErr := m.IDsStillUsed([]store.Tree{tree})
	if usedErr != nil {
		return fmt.Errorf("%w (and undoing it failed: %v)", err, usedErr)
	}
	if undoErr := m.Store.InTx(ctx, func(tx *store.Tx) error {
		if err := ReleaseOrKeep(ctx, tx, tree, used[tree.ProjectID], "rolled-back:"+name+"/"+area); err != nil {
			return err
		}
		return tx.DeleteTree(ctx, name, area)
	}); undoErr != nil {
		return fmt.Errorf("%w (and undoing it failed: %v)", err, undoErr)
	}
	return err
}

// makeDirs makes the directory rel beneath root and subs in it, each
// reached through no symlink and made (or found) a directory: a tenant who
// swaps a tree's directory for a link out of the root between the add's
// record of it and its making would otherwise have xfsq make directories
// where the link points, and the add's rollback remove them there.
func makeDirs(root, rel string, subs []string) error {
	var dirs []string
	for p := rel; p != "." && p != "/"; p = path.Dir(p) {
		dirs = append([]string{p}, dirs...)
	}
	for _, sub := range subs {
		dirs = append(dirs, path.Join(rel, sub))
	}
	return MakeDirsIn(root, dirs...)
}

// MakeDirsIn makes each of dirs, in order, a directory beneath root (or
// keeps the one there), each parent reached through no symlink and into no
// mount: a repair made after a look is refused by a tenant's mount on the
// tree since, never received by it.
func MakeDirsIn(root string, dirs ...string) error {
	top, err := saferm.Open(root)
	if err != nil {
		return err
	}
	defer top.Close()
	for _, d := range dirs {
		if err := makeDirBeneath(top, d); err != nil {
			return fmt.Errorf("create %s: %w", filepath.Join(root, d), err)
		}
	}
	return nil
}

// makeDirBeneath makes rel a directory beneath top, or keeps the one
// there; what is there must then open as a directory through no symlink.
func makeDirBeneath(top *saferm.Dir, rel string) error {
	parent, err := top.OpenDir(path.Dir(rel))
	if err != nil {
		return err
	}
	defer parent.Close()
	if err := unix.Mkdirat(parent.Fd(), path.Base(rel), 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return err
	}
	made, err := parent.OpenDir(path.Base(rel))
	if err != nil {
		return err
	}
	return made.Close()
}

// RemoveEmptyTree removes the tree rel beneath root that xfsq created, only
// as far as it is empty, through no symlink (a link where its directory
// was is left, and reported); it reports what it had to leave.
func RemoveEmptyTree(root, rel, a string) (left []string) {
	top, err := saferm.Open(root)
	if err != nil {
		return []string{filepath.Join(root, rel)}
	}
	defer top.Close()
	parent, err := top.OpenDir(path.Dir(rel))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return []string{filepath.Join(root, rel)}
	}
	defer parent.Close()
	name := path.Base(rel)
	if dir, err := parent.OpenDir(name); err == nil {
		for _, sub := range area.Skeleton(a) {
			if err := unix.Unlinkat(dir.Fd(), sub, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
				left = append(left, filepath.Join(root, rel, sub))
			}
		}
		dir.Close()
	}
	if err := unix.Unlinkat(parent.Fd(), name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		left = append(left, filepath.Join(root, rel))
	}
	return left
}

// IDsStillUsed asks the kernel which of the trees' IDs still own data,
// giving deleted inodes a moment to drain. Outside any transaction: the wait
// must not hold the database's write lock.
func (m *Manager) IDsStillUsed(trees []store.Tree) (map[quota.ProjectID]bool, error) {
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

// ReleaseOrKeep returns a tree's ID to the pool, or, while files still carry
// it, keeps it reserved under keepOwner so that no other project is given it.
func ReleaseOrKeep(ctx context.Context, tx *store.Tx, t store.Tree, used bool, keepOwner string) error {
	if used {
		return tx.SetIDOwner(ctx, t.FSUUID, t.ProjectID, keepOwner)
	}
	return tx.ReleaseID(ctx, t.FSUUID, t.ProjectID)
}

// inodegcWait bounds how long a removal waits for the kernel to let go of
// the inodes it just deleted before keeping an ID reserved instead.
const inodegcWait = 3 * time.Second
