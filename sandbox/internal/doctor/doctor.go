// Package doctor owns the comparison of what the store records with what
// the directories and the kernel hold (findings of drift, interrupted work
// and its leftovers) and the repair of what it can, each repair journalled
// (doctor.repaired). The store is the source of truth for limits.
//
// It works over a narrow surface of the core (Core, and the store and
// backend the core opened): it never opens a store or a backend, repairs
// only through the core's own operations, the backend's calls or the
// lifecycle's rollback and removal that the facade hands it (Projects), deletes
// nothing but through the core's journalled removal (a stray temporary
// file) or the settling of a deletion already journalled, and never imports
// a shell or another use case. The facade (package sandbox) is its only
// caller.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/quota/xfs"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/settings"
	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/units"
)

// Core is what doctor asks of the core: the settings and who acts, whether
// an operation still runs, the kernel's view (nil on the fallback) and the
// root's ID registry key and range, and the core's own operations that its
// repairs are made of.
type Core interface {
	Setting(ctx context.Context, key string) (settings.Value, error)
	ActorOf(ctx context.Context) string
	HolderLive(ctx context.Context, h string) bool
	IsXFS() bool
	Kernel() *xfs.FS
	HandNamed() (map[quota.ProjectID]bool, error)
	FSUUID() string
	IDRange() xfs.IDRange
	ApplyGrace(ctx context.Context) error
	AddMissingTree(ctx context.Context, name, area string) error
	MakeInboundTree(ctx context.Context) error
	// PlaceTree makes a recorded tree's directory and skeleton through no
	// symlink and into no mount, then gives it its ID and limits.
	PlaceTree(tree store.Tree) error
	Orphaned(ctx context.Context, p store.PendingEviction) bool
	Settle(ctx context.Context, root *saferm.Dir, p store.PendingEviction) error
	RemoveTemps(ctx context.Context, reclaimed []store.Reservation)
	RemoveTemp(ctx context.Context, parent *saferm.Dir, project, area, name, reason, policy string) error
}

// Projects is what doctor's repairs of an interrupted add or removal ask
// of the projects' lifecycle (sandbox/internal/lifecycle). The facade
// hands it over: a use case never imports another.
type Projects struct {
	// RollbackAdd undoes an add left half-way and says what it left.
	RollbackAdd func(ctx context.Context, seen store.Project) (left []string, err error)
	// FinishRemove finishes a removal left half-way, as project rm would.
	FinishRemove func(ctx context.Context, name string) error
}

// rollbackAdd is RollbackAdd, or an error naming it when none was handed
// over: the zero Projects (a test's, a doctor that only diagnoses) makes
// that repair a failed fix, never a panic.
func (p Projects) rollbackAdd(ctx context.Context, seen store.Project) ([]string, error) {
	if p.RollbackAdd == nil {
		return nil, errors.New("doctor: no Projects.RollbackAdd was handed over: the interrupted add cannot be rolled back")
	}
	return p.RollbackAdd(ctx, seen)
}

// finishRemove is FinishRemove, or an error naming it, as rollbackAdd.
func (p Projects) finishRemove(ctx context.Context, name string) error {
	if p.FinishRemove == nil {
		return errors.New("doctor: no Projects.FinishRemove was handed over: the interrupted removal cannot be finished")
	}
	return p.FinishRemove(ctx, name)
}

// Doctor checks and repairs one root.
type Doctor struct {
	Core
	Projects
	// Root is the sandbox root's absolute path; Store and Backend are the
	// core's.
	Root    string
	Store   *store.Store
	Backend quota.Backend
	// Snapshot walks a tree again when its last walk and the kernel
	// disagree (sandbox/internal/snapshots, handed over by the facade).
	Snapshot core.SnapshotFunc
}

// New is the doctor of the root c manages, repairing interrupted adds
// and removals through p and walking a tree again with snapshot.
func New(c *core.Manager, p Projects, snapshot core.SnapshotFunc) *Doctor {
	return &Doctor{Core: c, Projects: p, Root: c.Root, Store: c.Store, Backend: c.Backend, Snapshot: snapshot}
}

func (d *Doctor) abs(rel string) string { return filepath.Join(d.Root, rel) }

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
	// Another filesystem mounted on a tree's directory (a tenant's mount
	// that reached the host): xfsq leaves it alone and says so.
	MountedTree = "mounted-tree"
)

// Run compares the store, the directories and the kernel's IDs and
// limits, and with fix repairs what it can, journalling each repair
// (doctor.repaired). The store is the source of truth for limits.
func (d *Doctor) Run(ctx context.Context, fix bool) ([]Finding, error) {
	ctx, end := core.BeginOp(ctx)
	defer end()
	findings, err := d.diagnose(ctx)
	if err != nil || !fix {
		return findings, err
	}
	return findings, d.repair(ctx, findings)
}

// diagnose is every finding, in the order doctor reports them: interrupted
// operations, then the trees, the kernel's IDs and grace, directories no
// project owns, and what interrupted work left behind. Never nil.
func (d *Doctor) diagnose(ctx context.Context) ([]Finding, error) {
	projects, err := d.Store.Projects(ctx)
	if err != nil {
		return nil, err
	}
	findings := d.interruptedOperations(ctx, projects)
	trees, err := d.Store.Trees(ctx, "")
	if err != nil {
		return nil, err
	}
	// The root's own row is never adding or removing (Projects leaves it
	// out): its trees are checked like a ready project's.
	state := map[string]string{core.RootOwner: store.StateReady}
	for _, p := range projects {
		state[p.Name] = p.State
	}
	ready := func(t store.Tree) bool { return state[t.Project] == store.StateReady }
	found, err := d.treeFindings(ctx, projects, trees, ready)
	if err != nil {
		return nil, err
	}
	findings = append(findings, found...)
	findings = append(findings, d.unmanagedDirs(projects)...)
	left, err := d.leftovers(ctx, trees, ready)
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
func (d *Doctor) interruptedOperations(ctx context.Context, projects []store.Project) []Finding {
	var findings []Finding
	for _, p := range projects {
		if p.State == store.StateReady {
			continue
		}
		f := Finding{Project: p.Name}
		switch {
		case d.HolderLive(ctx, p.Adder):
			f.Kind, f.Detail, f.Fix = BusyProject, fmt.Sprintf("%s by %s", p.State, p.Adder), "none: wait for it to finish"
		case p.State == store.StateAdding:
			f.Kind, f.Detail, f.Fix = InterruptedAdd, "an add was interrupted half-way", "roll it back: remove the empty directories it made, clear limits, release its IDs"
			f.fixFn = func(ctx context.Context) error {
				left, err := d.rollbackAdd(ctx, p)
				if len(left) > 0 {
					f.Detail += fmt.Sprintf("; left non-empty %v", left)
				}
				return err
			}
		default:
			f.Kind, f.Detail, f.Fix = InterruptedRemove, "a removal was interrupted half-way", "finish it (data is kept; a removal with purge deletes it)"
			f.fixFn = func(ctx context.Context) error { return d.finishRemove(ctx, p.Name) }
		}
		findings = append(findings, f)
	}
	return findings
}

// treeFindings checks the recorded trees against the directories and,
// on the kernel's backend, its IDs, limits and grace periods. Trees of a
// project mid-operation are left to that operation's finding.
func (d *Doctor) treeFindings(ctx context.Context, projects []store.Project, trees []store.Tree, ready func(store.Tree) bool) ([]Finding, error) {
	var kernel map[quota.ProjectID]quota.Quota
	if d.Kernel() != nil {
		var err error
		if kernel, err = d.Kernel().All(); err != nil {
			return nil, err
		}
	}
	findings := d.missingTrees(ctx, projects, trees)
	findings = append(findings, d.missingInbound(trees)...)
	root, err := saferm.Open(d.Root)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	for _, t := range trees {
		if !ready(t) {
			continue // the interrupted operation's finding covers it
		}
		findings = append(findings, d.checkTree(root, t, kernel)...)
		if f, ok, err := d.checkEscape(ctx, t); err != nil {
			return nil, err
		} else if ok {
			findings = append(findings, f)
		}
	}
	if d.Kernel() == nil {
		return findings, nil
	}
	f, ok, err := d.checkGrace(ctx)
	if err != nil {
		return nil, err
	}
	if ok {
		findings = append(findings, f)
	}
	idFindings, err := d.checkIDs(ctx, trees, kernel)
	if err != nil {
		return nil, err
	}
	return append(findings, idFindings...), nil
}

// leftovers is what interrupted work left: deletions journalled as pending
// by a process that is gone, stray temporary files of writes, and on the
// fallback reservations of writes that never finished.
func (d *Doctor) leftovers(ctx context.Context, trees []store.Tree, ready func(store.Tree) bool) ([]Finding, error) {
	findings, err := d.interruptedDeletions(ctx)
	if err != nil {
		return nil, err
	}
	strays, err := d.strayTemps(ctx, trees, ready)
	if err != nil {
		return nil, err
	}
	findings = append(findings, strays...)
	if d.IsXFS() {
		return findings, nil
	}
	res, err := d.reservationFindings(ctx)
	if err != nil {
		return nil, err
	}
	return append(findings, res...), nil
}

// repair runs the fix of each finding that has one, and journals each fix
// that succeeded (doctor.repaired); a fix that fails says why in its finding.
func (d *Doctor) repair(ctx context.Context, findings []Finding) error {
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
		err := d.Store.InTx(ctx, func(tx *store.Tx) error {
			return tx.AppendEvent(ctx, f.Project, d.ActorOf(ctx), repairedPayload(*f))
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// checkTree looks at a tree's directory as the root's filesystem holds
// it (root: the sandbox root), never through a tenant's mount on it or in
// it, whose server may never answer.
func (d *Doctor) checkTree(root *saferm.Dir, t store.Tree, kernel map[quota.ProjectID]quota.Quota) []Finding {
	dir := d.abs(t.Path)
	base := Finding{Project: t.Project, Area: t.Area, Path: t.Path, ProjectID: t.ProjectID}
	// Made as an add makes it: a tenant's mount on the way, or a symlink,
	// refuses the repair, never leads it elsewhere or waits on it.
	reassign := func(context.Context) error { return d.PlaceTree(t) }
	look, err := core.LookAtTree(root, t.Path)
	f := base
	switch {
	case err != nil:
		f.Kind, f.Detail, f.Fix = MissingDirectory, err.Error(), "none: make "+dir+" a directory reached without links, then repair again"
		return []Finding{f}
	case look.Missing:
		f.Kind, f.Detail, f.Fix, f.fixFn = MissingDirectory, dir+" does not exist", "create it and assign its project ID and limits", reassign
		return []Finding{f}
	case look.Mounted:
		f.Kind, f.Detail = MountedTree, "another filesystem is mounted on "+dir+" or on the way to it: what the tenant writes there is not the tree's"
		f.Fix = "none: unmount it (umount -l " + dir + "), then run doctor again; xfsq never looks into a mount"
		return []Finding{f}
	case !look.Stat.IsDir():
		f.Kind, f.Detail, f.Fix = MissingDirectory, fmt.Sprintf("%s is %s, not a directory", dir, area.FileKind(look.Stat.Mode)), "none: move it away by hand, then repair again"
		return []Finding{f}
	}
	out := d.checkSkeleton(root, t, base)
	if d.Kernel() == nil {
		return out
	}
	if id, inherit, err := d.Kernel().TreeID(dir); err != nil || id != t.ProjectID || !inherit {
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
		f.Detail = fmt.Sprintf("kernel limits %s, recorded %s", core.FormatLimits(q.Limits), core.FormatLimits(t.Limits))
		f.fixFn = func(context.Context) error { return d.Backend.SetLimits(t.ProjectID, t.Limits) }
		out = append(out, f)
	}
	return out
}

// checkSkeleton finds a workspace's uploads/ or inbox/ gone (removed by
// hand or by a tenant): tenants and the sweep count on both being there.
// The fix makes the directory again; beneath the tree root it inherits the
// tree's project ID. Something else in its place is left to the operator.
func (d *Doctor) checkSkeleton(root *saferm.Dir, t store.Tree, base Finding) []Finding {
	var out []Finding
	for _, sub := range area.Skeleton(t.Area) {
		p := filepath.Join(d.abs(t.Path), sub)
		// As the kernel holds it: a tenant's FUSE mounted there is never
		// asked (its server may never answer).
		st, err := root.Lstat(path.Join(t.Path, sub))
		f := base
		f.Path = filepath.Join(t.Path, sub)
		switch {
		case errors.Is(err, os.ErrNotExist):
			f.Kind, f.Detail, f.Fix = MissingDirectory, p+" does not exist (every workspace has "+sub+"/)", "create it"
			// Only sub, in the tree as it is now: a tree mounted over
			// since the look refuses the repair; a name put there
			// meanwhile is kept if a directory, refused if not.
			f.fixFn = func(context.Context) error { return core.MakeDirsIn(d.Root, path.Join(t.Path, sub)) }
		case err == nil && !st.IsDir():
			f.Kind, f.Fix = MissingDirectory, "none: move it away by hand, then repair again"
			f.Detail = fmt.Sprintf("%s is %s, not a directory (every workspace has %s/)", p, area.FileKind(st.Mode), sub)
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
func (d *Doctor) checkEscape(ctx context.Context, t store.Tree) (Finding, bool, error) {
	if d.Kernel() == nil {
		return Finding{}, false, nil
	}
	snap, ok, err := d.Store.LatestSnapshot(ctx, store.TreeKey{Project: t.Project, Area: t.Area})
	if err != nil || !ok || !core.WalkDisagrees(snap) {
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
			if err := d.Backend.Assign(d.abs(t.Path), t.ProjectID); err != nil {
				return err
			}
			snaps, err := d.Snapshot(ctx, core.SnapshotOptions{Projects: []string{t.Project}, Area: t.Area})
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
func (d *Doctor) checkIDs(ctx context.Context, trees []store.Tree, kernel map[quota.ProjectID]quota.Quota) ([]Finding, error) {
	owned := map[quota.ProjectID]bool{}
	for _, t := range trees {
		owned[t.ProjectID] = true
	}
	records, err := d.Store.IDs(ctx, d.FSUUID())
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
				if err := d.Backend.Clear(r.ProjectID); err != nil {
					return err
				}
				return d.Store.InTx(ctx, func(tx *store.Tx) error { return tx.ReleaseID(ctx, d.FSUUID(), r.ProjectID) })
			}
		}
		out = append(out, f)
	}
	handNamed, err := d.HandNamed()
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
		inRange := id >= d.IDRange().First && id <= d.IDRange().Last
		if !inRange || handNamed[id] {
			f.Kind, f.Fix = ForeignKernelID, "none: not xfsq's (outside its ID range or named in /etc/projid)"
			f.Detail = fmt.Sprintf("project %d is in use (%d bytes, %d inodes) and belongs to no project xfsq manages", id, q.Bytes, q.Inodes)
		} else {
			f.Kind, f.Fix = OrphanKernelID, "clear its limits and reserve it until no file carries it"
			f.Detail = fmt.Sprintf("project %d in xfsq's range is in use (%d bytes, %d inodes, limits %s) but no project owns it",
				id, q.Bytes, q.Inodes, core.FormatLimits(q.Limits))
			f.fixFn = func(ctx context.Context) error {
				if err := d.Backend.Clear(id); err != nil {
					return err
				}
				if !q.OwnsData() {
					return nil
				}
				return d.Store.InTx(ctx, func(tx *store.Tx) error {
					_, err := tx.ReserveID(ctx, d.FSUUID(), xfs.IDRange{First: id, Last: id}, nil, "orphan:kernel")
					return err
				})
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// checkGrace compares the kernel's grace periods with soft_grace.
func (d *Doctor) checkGrace(ctx context.Context) (Finding, bool, error) {
	want, err := d.Setting(ctx, "soft_grace")
	if err != nil {
		return Finding{}, false, err
	}
	bytes, inodes, err := d.Kernel().Grace()
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
		fixFn: d.ApplyGrace}, true, nil
}

// missingTrees finds ready projects that lack a tree of an area, as every
// project registered before scratch had trees does after an upgrade: its
// scratch is then unbounded and uncounted. The fix gives it the tree as
// project add would (an ID, the area's default limits; an existing
// directory is adopted with what it holds), and undoes the tree whole if
// any step fails.
func (d *Doctor) missingTrees(ctx context.Context, projects []store.Project, trees []store.Tree) []Finding {
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
				Fix:    fmt.Sprintf("make the tree: a project ID for %s and the hard limit %s", rel, core.DefaultQuotaSetting(a)),
				fixFn:  func(ctx context.Context) error { return d.AddMissingTree(ctx, name, a) }})
		}
	}
	return out
}

// missingInbound is the finding of a root without its inbound tree.
func (d *Doctor) missingInbound(trees []store.Tree) []Finding {
	if _, ok := core.InboundOf(trees); ok {
		return nil
	}
	rel := area.TreePath(core.RootOwner, area.Inbound)
	return []Finding{{Kind: MissingTree, Project: core.RootOwner, Area: area.Inbound, Path: rel,
		Detail: fmt.Sprintf("the root has no inbound tree (initialised before xfsq gave it one): %s has no project ID and no limit", rel),
		Fix:    fmt.Sprintf("make the tree: a project ID for %s and the hard limit %s", rel, core.DefaultQuotaSetting(area.Inbound)),
		fixFn:  d.MakeInboundTree}}
}

// unmanagedDirs lists directories under the area bases that no project owns.
func (d *Doctor) unmanagedDirs(projects []store.Project) []Finding {
	known := map[string]bool{}
	for _, p := range projects {
		known[p.Name] = true
	}
	var out []Finding
	for _, a := range area.OfProject {
		entries, _ := os.ReadDir(d.abs(area.Base(a)))
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
func (d *Doctor) interruptedDeletions(ctx context.Context) ([]Finding, error) {
	pending, err := d.Store.PendingEvictions(ctx)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, p := range pending {
		if !d.Orphaned(ctx, p) {
			continue
		}
		out = append(out, Finding{Kind: InterruptedDeletion, Project: p.Project, Area: p.Record.Area, Path: p.Record.Path,
			Detail: fmt.Sprintf("its deletion (%s) was journalled as pending and never confirmed: the process making it stopped", p.Record.Policy),
			Fix:    "settle it in the journal: done if the entry is gone, failed if it is still there (the next sweep does the same)",
			fixFn: func(ctx context.Context) error {
				root, err := saferm.Open(d.Root)
				if err != nil {
					return err
				}
				defer root.Close()
				return d.Settle(ctx, root, p)
			}})
	}
	return out, nil
}
