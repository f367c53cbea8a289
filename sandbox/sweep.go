package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/sweep"
)

// SweepOptions choose what a sweep covers.
type SweepOptions struct {
	Projects []string // none: every project
	Areas    []string // none: all of area.SweepOrder
	DryRun   bool
	// Keep, with DryRun, keeps the dry run's plan in the store for review:
	// the outcome's Kept carries its id and its file, which Apply takes
	// back.
	Keep bool
	// Apply is a kept plan, by id or by file: it is checked as a whole
	// (checkPlan), then each of its entries is decided again by the planner
	// (rederive) and re-checked before it goes. Projects and Areas come
	// from it.
	Apply PlanRef
	// Exclusive sweeps the one project named alone, as the API does: the
	// project busy in another sweep is refused with errkind.Conflict before
	// anything is done (an applied plan is not spent), instead of being
	// skipped; a plan kept by an exclusive dry run is bound to the project,
	// and an exclusive sweep applies only a plan bound to it.
	Exclusive bool
	Budget    time.Duration
	// Background runs the deletions on a thread of their own at idle I/O
	// class and nice 10 (inventory.Background); the caller's threads keep
	// their priority. A one-shot CLI sweep asks for it; a server asks for
	// it on the passes it schedules.
	Background bool
}

// SweepOutcome is a sweep's result and the plan it followed.
type SweepOutcome struct {
	sweep.Result
	OverSoft []sweep.OverSoft `json:"over_soft"`
	Resolved int              `json:"resolved_pending"` // interrupted deletions of earlier sweeps settled first
	Plan     sweep.Plan       `json:"-"`
	// Kept is the plan a dry run with Keep kept.
	Kept *KeptPlan `json:"-"`
	// Busy are projects the caller named (or its plan did) that another
	// sweep held: left unswept, and, unlike a skip, a conflict the caller
	// must hear of (BusyError). Swept are the projects swept.
	Busy  []HeldProject `json:"-"`
	Swept []string      `json:"-"`
}

// HeldProject is a project another sweep held, and who held it.
type HeldProject struct{ Project, Holder string }

// BusyError is the conflict of the Busy projects (nil: none), for a shell
// to report beside the outcome: a 409, a non-zero exit.
func (o SweepOutcome) BusyError() error {
	if len(o.Busy) == 0 {
		return nil
	}
	e := &SweepBusyError{Swept: o.Swept}
	for _, b := range o.Busy {
		e.Projects, e.Holders = append(e.Projects, b.Project), append(e.Holders, b.Holder)
	}
	return e
}

// Policy reads the retention settings.
func (m *Manager) Policy(ctx context.Context) (sweep.Policy, error) {
	var p sweep.Policy
	durations := map[string]*time.Duration{"cache_min_age": &p.CacheMinAge, "workspace_trash_age": &p.TrashAge, "busy_grace": &p.BusyGrace, "scratch_ttl": &p.ScratchTTL,
		"inbound_ttl": &p.InboundTTL}
	for key, dst := range durations {
		v, err := m.setting(ctx, key)
		if err != nil {
			return p, err
		}
		*dst = v.Duration()
	}
	quota, err := m.setting(ctx, "cache_quota_per_project")
	if err != nil {
		return p, err
	}
	globs, err := m.setting(ctx, "workspace_trash_globs")
	if err != nil {
		return p, err
	}
	p.CacheQuotaPerProject, p.TrashGlobs = quota.Bytes(), strings.Split(globs.Value, ",")
	return p, nil
}

// Sweep is the one entry of a sweep: it plans, and, unless a dry run,
// deletes what the retention policies decide; a dry run may keep its plan
// for review (Keep), and a kept plan is applied by id or by file (Apply).
func (m *Manager) Sweep(ctx context.Context, o SweepOptions) (SweepOutcome, error) {
	ctx, end := BeginOp(ctx)
	defer end()
	out := SweepOutcome{Result: sweep.Result{SweepID: newSweepID(), DryRun: o.DryRun, Evicted: []sweep.Done{}, Skipped: []sweep.Skip{}, PerPolicy: map[string]int{}}}
	if !o.Apply.IsZero() && (o.DryRun || o.Keep || len(o.Areas) > 0 || (len(o.Projects) > 0 && !o.Exclusive)) {
		return out, inputErrorf("a saved plan names its own projects and areas, and is applied, not dry-run")
	}
	if o.Keep && !o.DryRun {
		return out, inputErrorf("a plan is kept by a dry run: a sweep that deletes has none to keep")
	}
	var data []byte
	if o.Exclusive {
		var unlock func()
		var err error
		data, unlock, err = m.prepareExclusive(ctx, o)
		defer unlock()
		if err != nil {
			return out, err
		}
	} else if !o.Apply.IsZero() {
		var err error
		if data, err = m.planFile(ctx, o.Apply); err != nil {
			return out, err
		}
	}
	var saved *SavedPlan
	if data != nil {
		sp, err := m.checkPlan(ctx, data)
		if err != nil {
			return out, err
		}
		saved, o.Projects, o.Areas = &sp, planProjects(sp.Plan), sp.Areas
		if len(o.Projects) == 0 {
			return out, nil // the plan deletes nothing
		}
	}
	bound := []string(nil)
	if o.Exclusive {
		bound = o.Projects
	}
	out, err := m.sweep(ctx, o, out, saved)
	if err == nil && o.Keep {
		out.Kept, err = m.keepPlan(ctx, out.Plan, o.Areas, bound)
	}
	return out, err
}

// sweep plans the sweep o asks for, and unless a dry run deletes, after
// saved, when applied, was checked.
func (m *Manager) sweep(ctx context.Context, o SweepOptions, out SweepOutcome, saved *SavedPlan) (SweepOutcome, error) {
	areas := map[string]bool{}
	for _, a := range o.Areas {
		if err := area.Check(a, area.SweepOrder); err != nil {
			return out, &InputError{Msg: err.Error()}
		}
		areas[a] = true
	}
	if len(areas) == 0 {
		for _, a := range area.SweepOrder {
			areas[a] = true
		}
	}
	policy, err := m.Policy(ctx)
	if err != nil {
		return out, err
	}
	root, err := os.OpenRoot(m.Root)
	if err != nil {
		return out, err
	}
	defer root.Close()
	// Every tree is walked, re-checked and deleted from this descriptor.
	dir, err := saferm.Open(m.Root)
	if err != nil {
		return out, err
	}
	defer dir.Close()
	if !o.DryRun {
		if out.Resolved, err = m.resolvePending(ctx, root); err != nil {
			return out, err
		}
	}
	names, err := m.sweepTargets(ctx, o, areas)
	if err != nil {
		return out, err
	}
	now := m.now()
	if o.DryRun { // a dry run deletes nothing and needs no lock
		plan, err := m.planSweep(ctx, dir, names, areas, policy, now)
		if err != nil {
			return out, err
		}
		out.Plan, out.OverSoft = plan, plan.OverSoft
		for _, ev := range plan.Evict {
			out.Evicted = append(out.Evicted, sweep.Done{Path: ev.Path, Bytes: ev.Bytes, Reason: ev.Reason, Policy: ev.Policy})
			out.BytesFreed += ev.Bytes
			out.PerPolicy[ev.Policy]++
		}
		out.Skipped = append(out.Skipped, plan.Skipped...)
		return out, nil
	}
	// One project at a time, each under its own sweep lock, taken only
	// while that project is planned and swept: a project that holds a
	// sweep up (a huge tree, a slow disk) never holds the others' locks.
	me := HolderOf(ctx)
	// Projects the caller named (or its plan did) and another sweep holds
	// are a conflict the caller must hear of, besides being skipped; in a
	// sweep of every project a busy one is only left alone: the other
	// sweep is covering it.
	named := len(o.Projects) > 0
	started := m.now()
	res := sweep.Result{SweepID: out.SweepID, Evicted: []sweep.Done{}, Skipped: []sweep.Skip{}, PerPolicy: map[string]int{}}
	out.Plan = sweep.Plan{OverSoft: []sweep.OverSoft{}, Evict: []sweep.Eviction{}, Skipped: []sweep.Skip{}, CacheCap: policy.CacheQuotaPerProject, CacheBytes: map[string]uint64{}}
	var done []string
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		busy, err := m.Store.LockSweep(ctx, n, me, func(h string) bool { return !holderAlive(h) })
		if err != nil {
			return out, err
		}
		if busy != "" {
			if named {
				out.Busy = append(out.Busy, HeldProject{Project: n, Holder: busy})
			}
			// Recorded either way: storage.swept says what was skipped and why.
			res.Skipped = append(res.Skipped, sweep.Skip{Project: n, Path: ownerPath(n), Reason: "another sweep (pid " + busy + ") is working on it"})
			continue
		}
		if sweepLocked != nil {
			sweepLocked(n)
		}
		r, err := m.sweepOne(ctx, dir, n, areas, policy, saved, out.SweepID, o, started)
		m.Store.UnlockSweep(context.WithoutCancel(ctx), n, me)
		out.Plan.Evict = append(out.Plan.Evict, r.plan.Evict...)
		out.Plan.Skipped = append(out.Plan.Skipped, r.plan.Skipped...)
		out.Plan.OverSoft = append(out.Plan.OverSoft, r.plan.OverSoft...)
		maps.Copy(out.Plan.CacheBytes, r.plan.CacheBytes)
		res.Evicted = append(res.Evicted, r.res.Evicted...)
		res.Skipped = append(res.Skipped, r.res.Skipped...)
		res.BytesFreed += r.res.BytesFreed
		for k, v := range r.res.PerPolicy {
			res.PerPolicy[k] += v
		}
		if err != nil {
			out.Result = res
			return out, err
		}
		done = append(done, n)
	}
	names = done
	out.OverSoft = out.Plan.OverSoft
	res.Duration = m.now().Sub(started)
	res.DurationSeconds = res.Duration.Seconds()
	res.Skipped = append(out.Skipped, res.Skipped...)
	slices.SortStableFunc(res.Skipped, func(a, b sweep.Skip) int { return strings.Compare(a.Path, b.Path) })
	out.Result = res
	planID := ""
	if saved != nil {
		planID = saved.ID // which reviewed plan this sweep applied
	}
	swept := sweptPayload(res, names, planID)
	out.Swept = names
	return out, m.Store.InTx(ctx, func(tx *store.Tx) error { return tx.AppendEvent(ctx, "", m.actor(ctx), swept) })
}

// evictionSettled, when a test sets it, is called after each deletion's
// settled record is journalled.
var evictionSettled func(project string, r deletion.Record)

// SweepBusyError is a sweep asked for projects that another sweep is
// working on: those were not swept, the others named were (Swept). It is
// SweepOutcome.BusyError, for a shell to report beside the outcome.
type SweepBusyError struct {
	Projects []string // not swept
	Holders  []string // who holds each one's sweep lock
	Swept    []string // swept nonetheless
}

func (e *SweepBusyError) Error() string {
	parts := make([]string, len(e.Projects))
	for i, p := range e.Projects {
		parts[i] = fmt.Sprintf("project %q is being swept by another operation (%s)", p, e.Holders[i])
	}
	return "not swept: " + strings.Join(parts, "; ")
}

func (e *SweepBusyError) Kind() errkind.Kind { return errkind.Conflict }

func (e *SweepBusyError) Hint() string {
	return "wait for that sweep to end, then sweep them again (an applied plan is spent: make a new one)"
}

// sweepLocked, when a test sets it, is called with each project as its
// sweep lock is taken.
var sweepLocked func(project string)

// sweptOne is what sweeping one project planned and did.
type sweptOne struct {
	plan sweep.Plan
	res  sweep.Result
}

// sweepOne plans and sweeps project n, which the caller holds the sweep
// lock of; a saved plan's entries for it are re-derived against the plan
// made now. The sweep's budget counts from started, across projects.
func (m *Manager) sweepOne(ctx context.Context, dir *saferm.Dir, n string, areas map[string]bool, policy sweep.Policy, saved *SavedPlan, sweepID string, o SweepOptions, started time.Time) (sweptOne, error) {
	var out sweptOne
	plan, err := m.planSweep(ctx, dir, []string{n}, areas, policy, m.now())
	if err != nil {
		return out, err
	}
	if saved != nil {
		plan = rederive(saved.Plan, plan, []string{n})
	}
	out.plan = plan
	if err := m.noteSweepOverSoft(ctx, plan.OverSoft, sweepID); err != nil {
		return out, err
	}
	budget := o.Budget
	if budget > 0 {
		if budget -= m.now().Sub(started); budget <= 0 {
			budget = time.Nanosecond // spent: every entry is skipped with the reason
		}
	}
	x := m.executor(sweepID, dir, policy, budget)
	if o.Background {
		inventory.Background(func() { out.res = x.Run(ctx, plan) }) // best effort: a sweep at normal priority still sweeps
	} else {
		out.res = x.Run(ctx, plan)
	}
	// What the plan found less what went: the rest is still to be freed.
	return out, m.recordReclaimable(context.WithoutCancel(ctx), []sweep.Project{{Name: n}}, areas, plan, out.res.Evicted, m.now())
}

// errLeasedNow is why a deletion whose pending record found a lease was not made.
var errLeasedNow = errors.New("the project was leased since planning")

// executor is the sweep executor of this root. Its pending records are
// written only while the project holds no lease, checked in the same
// transaction: the executor's own look at the lease (Leased) comes a moment
// before, and a lease taken in that moment must still stop the deletion.
//
// On the fallback each deletion is credited to its tree's ledger, as files
// rm credits it (RemovalCutoff, CreditRemoval): the report after a sweep
// shows the bytes freed, not the planning walk's figure until the next.
func (m *Manager) executor(sweepID string, root *saferm.Dir, policy sweep.Policy, budget time.Duration) *sweep.Executor {
	x := m.bareExecutor(sweepID, root, policy, budget)
	if !m.IsXFS() {
		tree := func(ev sweep.Eviction) store.Tree { return store.Tree{Project: ev.Project, Area: ev.Area} }
		x.Cutoff = func(ctx context.Context, ev sweep.Eviction) (time.Time, error) { return m.RemovalCutoff(ctx, tree(ev)) }
		x.Credit = func(ctx context.Context, ev sweep.Eviction, rep saferm.Report, started time.Time) error {
			return m.CreditRemoval(ctx, tree(ev), quota.Usage{Bytes: rep.Bytes, Inodes: rep.Inodes}, rep.Uncounted, started)
		}
	}
	return x
}

func (m *Manager) bareExecutor(sweepID string, root *saferm.Dir, policy sweep.Policy, budget time.Duration) *sweep.Executor {
	return &sweep.Executor{SweepID: sweepID, Root: root, Policy: policy, Now: m.now, Budget: budget,
		Leased: func(ctx context.Context, p string) (bool, error) { return m.Store.Leased(ctx, p, m.now()) },
		Journal: func(ctx context.Context, p string, r deletion.Record) error {
			r.Holder = HolderOf(ctx) // Run's context: the sweep's operation
			if r.State != deletion.StatePending {
				err := m.journalEviction(ctx, p, r)
				if evictionSettled != nil {
					evictionSettled(p, r)
				}
				return err
			}
			leased, err := m.Store.AppendPendingUnlessLeased(ctx, p, m.actor(ctx), r, m.now())
			if err == nil && leased {
				err = errLeasedNow
			}
			return err
		}}
}

func newSweepID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return "sw-" + time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}

// sweepTargets is the ready projects the sweep covers, and RootOwner for
// the root's inbound tree: named, or, in a sweep of every project, when
// inbound is among the areas and the root has the tree (a root initialised
// before it gets it from doctor --fix). A named owner none of whose areas
// is swept is bad input (sweep omni --area inbound, sweep _root --area
// cache).
func (m *Manager) sweepTargets(ctx context.Context, o SweepOptions, areas map[string]bool) ([]string, error) {
	if len(o.Projects) > 0 {
		for _, n := range o.Projects {
			if err := m.sweepable(ctx, n); err != nil {
				return nil, err
			}
			if len(sweepAreas(n, areas)) > 0 {
				continue
			}
			if n == RootOwner {
				return nil, errkind.WithFieldHint(errkind.Input, &InputError{Param: "areas", Msg: fmt.Sprintf("%s owns only the inbound tree, not the areas asked", RootOwner)},
					"sweep it with %s inbound, or with no area", "areas")
			}
			return nil, errkind.WithHint(errkind.Input, &InputError{Param: "areas", Msg: fmt.Sprintf("project %q has no inbound tree: inbound/ is the root's own, swept as %s", n, RootOwner)},
				fmt.Sprintf("xfsq sweep %s --area inbound", RootOwner))
		}
		return o.Projects, nil
	}
	ps, err := m.Store.Projects(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range ps {
		if p.State == store.StateReady && len(sweepAreas(p.Name, areas)) > 0 {
			names = append(names, p.Name)
		}
	}
	if areas[area.Inbound] {
		if _, ok, err := m.inboundTree(ctx); err != nil {
			return nil, err
		} else if ok {
			names = append(names, RootOwner)
		}
	}
	return names, nil
}

// sweepable checks that name is a ready project, or RootOwner with its
// inbound tree.
func (m *Manager) sweepable(ctx context.Context, name string) error {
	_, err := m.Tree(ctx, name, homeArea(name))
	return err
}

// homeArea is the tree that stands for an owner as a whole: a project's
// workspace, the root's inbound tree.
func homeArea(owner string) string {
	if owner == RootOwner {
		return area.Inbound
	}
	return area.Workspace
}

// sweepAreas are the areas of areas that owner has, in sweep order: a
// project's cache, workspace and scratch; RootOwner's inbound.
func sweepAreas(owner string, areas map[string]bool) []string {
	var out []string
	for _, a := range area.SweepOrder {
		if areas[a] && (a == area.Inbound) == (owner == RootOwner) {
			out = append(out, a)
		}
	}
	return out
}

// ownerPath is where a sweep's skip of a whole owner points.
func ownerPath(owner string) string { return area.TreePath(owner, homeArea(owner)) }

// planSweep walks the trees of the projects and plans.
func (m *Manager) planSweep(ctx context.Context, dir *saferm.Dir, names []string, areas map[string]bool, policy sweep.Policy, now time.Time) (sweep.Plan, error) {
	g := &sweep.Gatherer{Root: dir, Globs: policy.TrashGlobs}
	var refused []sweep.Skip
	active, err := m.Store.ActiveLeases(ctx, now)
	if err != nil {
		return sweep.Plan{}, err
	}
	// The quota check reads fresh figures of the projects swept, and only
	// of those: the kernel's on XFS, a walk now on the fallback.
	usage := map[string]TreeStatus{}
	unmeasured := map[string]string{} // project -> why its usage could not be read
	for _, n := range names {
		trees, err := m.Store.Trees(ctx, n)
		if err != nil {
			return sweep.Plan{}, err
		}
		rows, err := m.status(ctx, trees, nil, Read{Refresh: true})
		if err != nil {
			if ctx.Err() != nil {
				return sweep.Plan{}, ctx.Err()
			}
			unmeasured[n] = fmt.Sprintf("could not be planned, so nothing of the project is swept: usage for the quota check: %v", err)
			continue
		}
		for _, r := range rows {
			usage[r.Project+"/"+r.Area] = r
		}
	}
	var projects []sweep.Project
	for _, n := range names {
		pr := sweep.Project{Name: n, LeasedBy: active[n]}
		if why, ok := unmeasured[n]; ok && len(pr.LeasedBy) == 0 {
			pr.Trees = unplannable(n, areas, usage, why)
		} else if len(pr.LeasedBy) == 0 {
			for _, a := range sweepAreas(n, areas) {
				var t sweep.Tree
				var err error
				switch a {
				case area.Cache:
					t, err = g.TopLevel(a, area.TreePath(n, area.Cache))
				case area.Workspace:
					t, err = g.Workspace(ctx, area.TreePath(n, area.Workspace))
					t.Bytes = usage[n+"/"+area.Workspace].UsedBytes
				case area.Scratch:
					t, err = g.TopLevel(a, "scratch/"+n)
				case area.Inbound:
					t, err = g.TopLevel(a, area.TreePath(RootOwner, area.Inbound))
				}
				var tr *sweep.TreeRefusedError
				if errors.As(err, &tr) {
					// A tree root swapped for a link is another tree: not this one's to sweep.
					refused = append(refused, sweep.Skip{Project: n, Path: tr.Tree, Reason: tr.Error()})
					continue
				}
				if err != nil {
					if ctx.Err() != nil {
						return sweep.Plan{}, ctx.Err()
					}
					// One project that cannot be walked (a tenant's tree is
					// whatever the tenant made it) must not stop the sweep of
					// the others: it is left whole, and the plan says why.
					pr.Trees = unplannable(n, areas, usage, fmt.Sprintf("could not be planned, so nothing of the project is swept: walk %s: %v", a, err))
					break
				}
				t.Soft = usage[n+"/"+a].BytesSoft
				pr.Trees = append(pr.Trees, t)
			}
		}
		projects = append(projects, pr)
	}
	plan := sweep.MakePlan(projects, policy, now)
	plan.Skipped = append(plan.Skipped, refused...)
	return plan, m.recordReclaimable(ctx, projects, areas, plan, nil, now)
}

// resolvePending settles deletions journalled as pending by a process that
// is gone (a sweep, purge or files rm that was killed): gone from disk, they
// are confirmed done; still there, they are marked failed (the next plan
// decides about them afresh). It returns how many it settled.
func (m *Manager) resolvePending(ctx context.Context, root *os.Root) (int, error) {
	pending, err := m.Store.PendingEvictions(ctx)
	if err != nil {
		return 0, err
	}
	settled := 0
	for _, p := range pending {
		if !orphaned(p) {
			continue
		}
		if err := m.settle(ctx, root, p); err != nil {
			return settled, err
		}
		settled++
	}
	return settled, nil
}

// orphaned reports whether a pending deletion's writer is gone. A deletion
// whose operation is still under way (another sweep, a purge, a files rm,
// in this process or another) is in progress, not interrupted: its holder
// will confirm it. Records without a holder predate the field and count as
// orphaned.
func orphaned(p store.PendingEviction) bool {
	h := p.Record.Holder
	return h == "" || !holderAlive(h)
}

// settle journals the outcome of an orphaned pending deletion, read from disk.
func (m *Manager) settle(ctx context.Context, root *os.Root, p store.PendingEviction) error {
	rec := p.Record
	rec.Holder = HolderOf(ctx)
	if _, err := root.Lstat(rec.Path); errors.Is(err, fs.ErrNotExist) {
		rec.State, rec.Recovered = deletion.StateDone, true
	} else {
		rec.State, rec.Error = deletion.StateFailed, "interrupted before the deletion finished: the entry is still there"
	}
	_, err := m.Store.SettlePending(ctx, p.Project, m.ActorOf(ctx), rec)
	return err
}

// unplannable is the trees of a project left whole for why: no entries,
// only the figures the quota check needs, and the reason in the plan.
func unplannable(name string, areas map[string]bool, usage map[string]TreeStatus, why string) []sweep.Tree {
	var trees []sweep.Tree
	for _, a := range sweepAreas(name, areas) { // already in sweep order
		u := usage[name+"/"+a]
		// Each tree says why, so that a saved plan's entries in any of
		// them are dropped with the reason.
		tree := treeOf(name, a)
		trees = append(trees, sweep.Tree{Area: a, Path: tree, Bytes: u.UsedBytes, Soft: u.BytesSoft,
			Skipped: []sweep.Skip{{Path: tree, Reason: why}}})
	}
	return trees
}
