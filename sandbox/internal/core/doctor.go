package core

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/quota/xfs"
	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/units"
)

// Finding is one drift between the store, the directories and the kernel.
type Finding struct {
	Kind      string          `json:"kind"`
	Project   string          `json:"project,omitempty"`
	Area      string          `json:"area,omitempty"`
	Path      string          `json:"path,omitempty"`
	ProjectID quota.ProjectID `json:"project_id,omitempty"`
	Detail    string          `json:"detail"`
	// Fix is what --fix does (or did), or what to do by hand when xfsq
	// will not touch it.
	Fix   string `json:"fix"`
	Fixed bool   `json:"fixed"`
	Error string `json:"error,omitempty"` // a fix that failed
	fixFn func(context.Context) error
}

// Kinds of finding.
const (
	InterruptedAdd    = "interrupted-add"
	InterruptedRemove = "interrupted-remove"
	BusyProject       = "operation-in-progress"
	MissingDirectory  = "missing-directory"
	// A ready project without a tree of one of area.OfProject: registered by an
	// xfsq from before that area had trees (scratch came later); or a
	// root without its inbound tree, initialised before it had one.
	MissingTree = "missing-tree"
	// XFS: the filesystem's grace periods differ from soft_grace.
	GraceDrift      = "grace-drift"
	WrongProjectID  = "wrong-project-id"
	LimitsDrift     = "limits-drift"
	OrphanKernelID  = "unowned-kernel-id"
	ForeignKernelID = "foreign-kernel-id"
	KeptID          = "kept-id"
	UnmanagedDir    = "unmanaged-directory"
	QuotaEscape     = "quota-escape"
	// A deletion journalled as pending whose process stopped before
	// confirming it (a killed sweep, purge or files rm).
	InterruptedDeletion = "interrupted-deletion"
)

// Doctor compares the store, the directories and the kernel's IDs and
// limits, and with fix repairs what it can, journalling each repair
// (doctor.repaired). The store is the source of truth for limits.
func (m *Manager) Doctor(ctx context.Context, fix bool) ([]Finding, error) {
	ctx, end := BeginOp(ctx)
	defer end()
	findings, err := m.diagnose(ctx)
	if err != nil || !fix {
		return findings, err
	}
	return findings, m.repair(ctx, findings)
}

// diagnose is every finding, in the order doctor reports them: interrupted
// operations, then the trees, the kernel's IDs and grace, directories no
// project owns, and what interrupted work left behind. Never nil.
func (m *Manager) diagnose(ctx context.Context) ([]Finding, error) {
	projects, err := m.Store.Projects(ctx)
	if err != nil {
		return nil, err
	}
	findings := m.interruptedOperations(ctx, projects)
	trees, err := m.Store.Trees(ctx, "")
	if err != nil {
		return nil, err
	}
	// The root's own row is never adding or removing (Projects leaves it
	// out): its trees are checked like a ready project's.
	state := map[string]string{RootOwner: store.StateReady}
	for _, p := range projects {
		state[p.Name] = p.State
	}
	ready := func(t store.Tree) bool { return state[t.Project] == store.StateReady }
	found, err := m.treeFindings(ctx, projects, trees, ready)
	if err != nil {
		return nil, err
	}
	findings = append(findings, found...)
	findings = append(findings, m.unmanagedDirs(projects)...)
	left, err := m.leftovers(ctx, trees, ready)
	if err != nil {
		return nil, err
	}
	findings = append(findings, left...)
	if findings == nil {
		findings = []Finding{} // a shell encodes it as [], never null
	}
	return findings, nil
}

// interruptedOperations is the projects left adding or removing: by an
// operation still under way, or by one that stopped half-way.
func (m *Manager) interruptedOperations(ctx context.Context, projects []store.Project) []Finding {
	var findings []Finding
	for _, p := range projects {
		if p.State == store.StateReady {
			continue
		}
		f := Finding{Project: p.Name}
		switch {
		case m.holderLive(ctx, p.Adder):
			f.Kind, f.Detail, f.Fix = BusyProject, fmt.Sprintf("%s by %s", p.State, p.Adder), "none: wait for it to finish"
		case p.State == store.StateAdding:
			f.Kind, f.Detail, f.Fix = InterruptedAdd, "an add was interrupted half-way", "roll it back: remove the empty directories it made, clear limits, release its IDs"
			f.fixFn = func(ctx context.Context) error {
				left, err := m.rollbackAdd(ctx, p.Name)
				if len(left) > 0 {
					f.Detail += fmt.Sprintf("; left non-empty %v", left)
				}
				return err
			}
		default:
			f.Kind, f.Detail, f.Fix = InterruptedRemove, "a removal was interrupted half-way", "finish it (data is kept; a removal with purge deletes it)"
			f.fixFn = func(ctx context.Context) error { _, err := m.Remove(ctx, p.Name, RemoveOptions{}); return err }
		}
		findings = append(findings, f)
	}
	return findings
}

// treeFindings checks the recorded trees against the directories and,
// on the kernel's backend, its IDs, limits and grace periods. Trees of a
// project mid-operation are left to that operation's finding.
func (m *Manager) treeFindings(ctx context.Context, projects []store.Project, trees []store.Tree, ready func(store.Tree) bool) ([]Finding, error) {
	var kernel map[quota.ProjectID]quota.Quota
	if m.xfs != nil {
		var err error
		if kernel, err = m.xfs.All(); err != nil {
			return nil, err
		}
	}
	findings := m.missingTrees(ctx, projects, trees)
	findings = append(findings, m.missingInbound(trees)...)
	for _, t := range trees {
		if !ready(t) {
			continue // the interrupted operation's finding covers it
		}
		findings = append(findings, m.checkTree(t, kernel)...)
		if f, ok, err := m.checkEscape(ctx, t); err != nil {
			return nil, err
		} else if ok {
			findings = append(findings, f)
		}
	}
	if m.xfs == nil {
		return findings, nil
	}
	f, ok, err := m.checkGrace(ctx)
	if err != nil {
		return nil, err
	}
	if ok {
		findings = append(findings, f)
	}
	idFindings, err := m.checkIDs(ctx, trees, kernel)
	if err != nil {
		return nil, err
	}
	return append(findings, idFindings...), nil
}

// leftovers is what interrupted work left: deletions journalled as pending
// by a process that is gone, stray temporary files of writes, and on the
// fallback reservations of writes that never finished.
func (m *Manager) leftovers(ctx context.Context, trees []store.Tree, ready func(store.Tree) bool) ([]Finding, error) {
	findings, err := m.interruptedDeletions(ctx)
	if err != nil {
		return nil, err
	}
	strays, err := m.strayTemps(ctx, trees, ready)
	if err != nil {
		return nil, err
	}
	findings = append(findings, strays...)
	if m.IsXFS() {
		return findings, nil
	}
	res, err := m.reservationFindings(ctx)
	if err != nil {
		return nil, err
	}
	return append(findings, res...), nil
}

// repair runs the fix of each finding that has one, and journals each fix
// that succeeded (doctor.repaired); a fix that fails says why in its finding.
func (m *Manager) repair(ctx context.Context, findings []Finding) error {
	for i := range findings {
		f := &findings[i]
		if f.fixFn == nil {
			continue
		}
		if err := f.fixFn(ctx); err != nil {
			f.Error = err.Error()
			continue
		}
		f.Fixed = true
		err := m.Store.InTx(ctx, func(tx *store.Tx) error {
			return tx.AppendEvent(ctx, f.Project, m.actor(ctx), repairedPayload(*f))
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (m *Manager) checkTree(t store.Tree, kernel map[quota.ProjectID]quota.Quota) []Finding {
	dir := m.abs(t.Path)
	base := Finding{Project: t.Project, Area: t.Area, Path: t.Path, ProjectID: t.ProjectID}
	reassign := func(ctx context.Context) error {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for _, sub := range area.Skeleton(t.Area) {
			if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
				return err
			}
		}
		if err := m.Backend.Assign(dir, t.ProjectID); err != nil {
			return err
		}
		return m.Backend.SetLimits(t.ProjectID, t.Limits)
	}
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		f := base
		f.Kind, f.Detail, f.Fix, f.fixFn = MissingDirectory, dir+" does not exist", "create it and assign its project ID and limits", reassign
		return []Finding{f}
	}
	if err == nil && !fi.IsDir() {
		f := base
		f.Kind, f.Detail, f.Fix = MissingDirectory, fmt.Sprintf("%s is a %s, not a directory", dir, fi.Mode().Type()), "none: move it away by hand, then repair again"
		return []Finding{f}
	}
	out := m.checkSkeleton(t, base)
	if m.xfs == nil {
		return out
	}
	if id, inherit, err := m.xfs.TreeID(dir); err != nil || id != t.ProjectID || !inherit {
		f := base
		f.Kind, f.Fix, f.fixFn = WrongProjectID, "assign the recorded project ID to the tree again", reassign
		f.Detail = fmt.Sprintf("tree root carries project %d (inherit %v), recorded %d", id, inherit, t.ProjectID)
		if err != nil {
			f.Detail = err.Error()
		}
		out = append(out, f)
	}
	if q := kernel[t.ProjectID]; q.Limits != t.Limits {
		f := base
		f.Kind, f.Fix = LimitsDrift, "set the recorded limits again"
		f.Detail = fmt.Sprintf("kernel limits %s, recorded %s", formatLimits(q.Limits), formatLimits(t.Limits))
		f.fixFn = func(context.Context) error { return m.Backend.SetLimits(t.ProjectID, t.Limits) }
		out = append(out, f)
	}
	return out
}

// checkSkeleton finds a workspace's uploads/ or inbox/ gone (removed by
// hand or by a tenant): tenants and the sweep count on both being there.
// The fix makes the directory again; beneath the tree root it inherits the
// tree's project ID. Something else in its place is left to the operator.
func (m *Manager) checkSkeleton(t store.Tree, base Finding) []Finding {
	var out []Finding
	for _, sub := range area.Skeleton(t.Area) {
		p := filepath.Join(m.abs(t.Path), sub)
		fi, err := os.Lstat(p)
		f := base
		f.Path = filepath.Join(t.Path, sub)
		switch {
		case errors.Is(err, os.ErrNotExist):
			f.Kind, f.Detail, f.Fix = MissingDirectory, p+" does not exist (every workspace has "+sub+"/)", "create it"
			// Mkdir, not MkdirAll: the tree root was just seen, and a
			// name put there meanwhile is not followed (EEXIST).
			f.fixFn = func(context.Context) error { return os.Mkdir(p, 0o755) }
		case err == nil && !fi.IsDir():
			f.Kind, f.Fix = MissingDirectory, "none: move it away by hand, then repair again"
			f.Detail = fmt.Sprintf("%s is a %s, not a directory (every workspace has %s/)", p, fi.Mode().Type(), sub)
		default:
			continue
		}
		out = append(out, f)
	}
	return out
}

// checkEscape reads the symptom of files that left a tree's quota (their
// owner changed their project ID): the tree's last walk found more than the
// kernel counted for its ID at the same moment. The fix re-tags the tree
// and takes a new snapshot, which is the new evidence.
func (m *Manager) checkEscape(ctx context.Context, t store.Tree) (Finding, bool, error) {
	if m.xfs == nil {
		return Finding{}, false, nil
	}
	snap, ok, err := m.Store.LatestSnapshot(ctx, store.TreeKey{Project: t.Project, Area: t.Area})
	if err != nil || !ok || !walkDisagrees(snap) {
		return Finding{}, false, err
	}
	walk, kernel := snap.SizeBytes, uint64(snap.KernelBytes)
	if walk < kernel { // the kernel counts more: not files that left the quota
		return Finding{}, false, nil
	}
	return Finding{Kind: QuotaEscape, Project: t.Project, Area: t.Area, Path: t.Path, ProjectID: t.ProjectID,
		Detail: fmt.Sprintf("the walk at %s found %d bytes under the tree, the kernel counted %d for project %d: files there carry another project ID",
			snap.At.Format("2006-01-02T15:04:05Z07:00"), walk, kernel, t.ProjectID),
		Fix: "re-tag everything under the tree with its project ID, then take a new snapshot",
		fixFn: func(ctx context.Context) error {
			if err := m.Backend.Assign(m.abs(t.Path), t.ProjectID); err != nil {
				return err
			}
			snaps, err := m.Snapshot(ctx, SnapshotOptions{Projects: []string{t.Project}, Area: t.Area})
			if err != nil {
				return err
			}
			if len(snaps) == 1 && snaps[0].Error != "" {
				return errors.New(snaps[0].Error)
			}
			return nil
		}}, true, nil
}

// checkIDs finds kernel IDs no tree owns and registered IDs no tree uses.
func (m *Manager) checkIDs(ctx context.Context, trees []store.Tree, kernel map[quota.ProjectID]quota.Quota) ([]Finding, error) {
	owned := map[quota.ProjectID]bool{}
	for _, t := range trees {
		owned[t.ProjectID] = true
	}
	records, err := m.Store.IDs(ctx, m.fsUUID)
	if err != nil {
		return nil, err
	}
	registered := map[quota.ProjectID]string{}
	var out []Finding
	for _, r := range records {
		registered[r.ProjectID] = r.Owner
		if owned[r.ProjectID] {
			continue
		}
		f := Finding{Kind: KeptID, ProjectID: r.ProjectID}
		if q := kernel[r.ProjectID]; q.OwnsData() {
			f.Detail = fmt.Sprintf("reserved for %s; %d bytes in %d inodes still carry it", r.Owner, q.Bytes, q.Inodes)
			f.Fix = "none while files carry it: delete them (or re-add the project), then repair again"
		} else {
			f.Detail = fmt.Sprintf("reserved for %s; no file carries it any more", r.Owner)
			f.Fix = "clear its limits and release it"
			f.fixFn = func(ctx context.Context) error {
				if err := m.Backend.Clear(r.ProjectID); err != nil {
					return err
				}
				return m.Store.InTx(ctx, func(tx *store.Tx) error { return tx.ReleaseID(ctx, m.fsUUID, r.ProjectID) })
			}
		}
		out = append(out, f)
	}
	handNamed, err := m.alloc.HandNamed()
	if err != nil {
		return nil, err
	}
	ids := make([]quota.ProjectID, 0, len(kernel))
	for id := range kernel {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if owned[id] || registered[id] != "" {
			continue
		}
		q := kernel[id]
		f := Finding{ProjectID: id}
		inRange := id >= m.Range.First && id <= m.Range.Last
		if !inRange || handNamed[id] {
			f.Kind, f.Fix = ForeignKernelID, "none: not xfsq's (outside its ID range or named in /etc/projid)"
			f.Detail = fmt.Sprintf("project %d is in use (%d bytes, %d inodes) and belongs to no project xfsq manages", id, q.Bytes, q.Inodes)
		} else {
			f.Kind, f.Fix = OrphanKernelID, "clear its limits and reserve it until no file carries it"
			f.Detail = fmt.Sprintf("project %d in xfsq's range is in use (%d bytes, %d inodes, limits %s) but no project owns it",
				id, q.Bytes, q.Inodes, formatLimits(q.Limits))
			f.fixFn = func(ctx context.Context) error {
				if err := m.Backend.Clear(id); err != nil {
					return err
				}
				if !q.OwnsData() {
					return nil
				}
				return m.Store.InTx(ctx, func(tx *store.Tx) error {
					_, err := tx.ReserveID(ctx, m.fsUUID, xfs.IDRange{First: id, Last: id}, nil, "orphan:kernel")
					return err
				})
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// checkGrace compares the kernel's grace periods with soft_grace.
func (m *Manager) checkGrace(ctx context.Context) (Finding, bool, error) {
	want, err := m.setting(ctx, "soft_grace")
	if err != nil {
		return Finding{}, false, err
	}
	bytes, inodes, err := m.xfs.Grace()
	if err != nil {
		return Finding{}, false, err
	}
	if bytes == want.Duration() && inodes == want.Duration() {
		return Finding{}, false, nil
	}
	return Finding{Kind: GraceDrift,
		Detail: fmt.Sprintf("the kernel's grace periods are %s (bytes) and %s (inodes), soft_grace is %s (0 is the kernel's default, 7d)",
			units.FormatDuration(bytes), units.FormatDuration(inodes), units.FormatDuration(want.Duration())),
		Fix:   "set the kernel's grace periods to soft_grace",
		fixFn: m.applyGrace}, true, nil
}

// missingTrees finds ready projects that lack a tree of an area, as every
// project registered before scratch had trees does after an upgrade: its
// scratch is then unbounded and uncounted. The fix gives it the tree as
// project add would (an ID, the area's default limits; an existing
// directory is adopted with what it holds), and undoes the tree whole if
// any step fails.
func (m *Manager) missingTrees(ctx context.Context, projects []store.Project, trees []store.Tree) []Finding {
	has := map[string]bool{}
	for _, t := range trees {
		has[t.Project+"/"+t.Area] = true
	}
	var out []Finding
	for _, p := range projects {
		if p.State != store.StateReady {
			continue
		}
		for _, a := range area.OfProject {
			if has[p.Name+"/"+a] {
				continue
			}
			name, a, rel := p.Name, a, area.TreePath(p.Name, a)
			out = append(out, Finding{Kind: MissingTree, Project: name, Area: a, Path: rel,
				Detail: fmt.Sprintf("the project has no %s tree (registered before xfsq gave projects one): %s has no project ID and no limit", a, rel),
				Fix:    fmt.Sprintf("make the tree: a project ID for %s and the hard limit %s", rel, areaDefaultQuota[a]),
				fixFn:  func(ctx context.Context) error { return m.addMissingTree(ctx, name, a) }})
		}
	}
	return out
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

// unmanagedDirs lists directories under the area bases that no project owns.
func (m *Manager) unmanagedDirs(projects []store.Project) []Finding {
	known := map[string]bool{}
	for _, p := range projects {
		known[p.Name] = true
	}
	var out []Finding
	for _, a := range area.OfProject {
		entries, _ := os.ReadDir(m.abs(area.Base(a)))
		for _, e := range entries {
			if known[e.Name()] {
				continue
			}
			out = append(out, Finding{Kind: UnmanagedDir, Area: a, Path: filepath.Join(area.Base(a), e.Name()),
				Detail: "no project owns it; it has no limits", Fix: "none: adding a project named " + e.Name() + " adopts it, or remove it by hand"})
		}
	}
	return out
}

// interruptedDeletions finds deletions journalled as pending whose writer is
// gone. The fix settles each one in the journal as the next sweep would.
func (m *Manager) interruptedDeletions(ctx context.Context) ([]Finding, error) {
	pending, err := m.Store.PendingEvictions(ctx)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, p := range pending {
		if !m.orphaned(ctx, p) {
			continue
		}
		out = append(out, Finding{Kind: InterruptedDeletion, Project: p.Project, Area: p.Record.Area, Path: p.Record.Path,
			Detail: fmt.Sprintf("its deletion (%s) was journalled as pending and never confirmed: the process making it stopped", p.Record.Policy),
			Fix:    "settle it in the journal: done if the entry is gone, failed if it is still there (the next sweep does the same)",
			fixFn: func(ctx context.Context) error {
				root, err := os.OpenRoot(m.Root)
				if err != nil {
					return err
				}
				defer root.Close()
				return m.settle(ctx, root, p)
			}})
	}
	return out, nil
}
