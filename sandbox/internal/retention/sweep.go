package retention

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/sandbox/internal/core"
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
func (m *Sweeper) Policy(ctx context.Context) (sweep.Policy, error) {
	var p sweep.Policy
	durations := map[string]*time.Duration{"cache_min_age": &p.CacheMinAge, "workspace_trash_age": &p.TrashAge, "busy_grace": &p.BusyGrace, "scratch_ttl": &p.ScratchTTL,
		"inbound_ttl": &p.InboundTTL}
	for key, dst := range durations {
		v, err := m.Setting(ctx, key)
		if err != nil {
			return p, err
		}
		*dst = v.Duration()
	}
	quota, err := m.Setting(ctx, "cache_quota_per_project")
	if err != nil {
		return p, err
	}
	globs, err := m.Setting(ctx, "workspace_trash_globs")
	if err != nil {
		return p, err
	}
	p.CacheQuotaPerProject, p.TrashGlobs = quota.Bytes(), strings.Split(globs.Value, ",")
	return p, nil
}

// Sweep is the one entry of a sweep: it plans, and, unless a dry run,
// deletes what the retention policies decide; a dry run may keep its plan
// for review (Keep), and a kept plan is applied by id or by file (Apply).
func (m *Sweeper) Sweep(ctx context.Context, o SweepOptions) (SweepOutcome, error) {
	ctx, end := core.BeginOp(ctx)
	defer end()
	out := SweepOutcome{Result: sweep.Result{SweepID: newSweepID(), DryRun: o.DryRun, Evicted: []sweep.Done{}, Skipped: []sweep.Skip{}, PerPolicy: map[string]int{}}}
	if err := checkSweepOptions(o); err != nil {
		return out, err
	}
	data, unlock, err := m.planToApply(ctx, o)
	defer unlock()
	if err != nil {
		return out, err
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
	out, err = m.sweep(ctx, o, out, saved)
	if err == nil && o.Keep {
		out.Kept, err = m.keepPlan(ctx, out.Plan, o.Areas, bound)
	}
	return out, err
}

// checkSweepOptions refuses options that contradict each other.
func checkSweepOptions(o SweepOptions) error {
	if !o.Apply.IsZero() && (o.DryRun || o.Keep || len(o.Areas) > 0 || (len(o.Projects) > 0 && !o.Exclusive)) {
		return inputErrorf("a saved plan names its own projects and areas, and is applied, not dry-run")
	}
	if o.Keep && !o.DryRun {
		return inputErrorf("a plan is kept by a dry run: a sweep that deletes has none to keep")
	}
	return nil
}

// planToApply is the file of the kept plan o applies (nil: none) and what
// releases the project an exclusive sweep locked ahead (prepareExclusive);
// the release is to be called even on an error.
func (m *Sweeper) planToApply(ctx context.Context, o SweepOptions) ([]byte, func(), error) {
	if o.Exclusive {
		return m.prepareExclusive(ctx, o)
	}
	if o.Apply.IsZero() {
		return nil, func() {}, nil
	}
	data, err := m.planFile(ctx, o.Apply)
	return data, func() {}, err
}

// sweep plans the sweep o asks for, and unless a dry run deletes, after
// saved, when applied, was checked.
func (m *Sweeper) sweep(ctx context.Context, o SweepOptions, out SweepOutcome, saved *SavedPlan) (SweepOutcome, error) {
	areas, err := areaSet(o.Areas)
	if err != nil {
		return out, err
	}
	policy, err := m.Policy(ctx)
	if err != nil {
		return out, err
	}
	// Every tree is walked, re-checked and deleted from this descriptor.
	dir, err := saferm.Open(m.Root)
	if err != nil {
		return out, err
	}
	defer dir.Close()
	if !o.DryRun {
		if out.Resolved, err = m.ResolvePending(ctx, dir); err != nil {
			return out, err
		}
	}
	names, err := m.sweepTargets(ctx, o, areas)
	if err != nil {
		return out, err
	}
	if o.DryRun { // a dry run deletes nothing and needs no lock
		return m.dryRun(ctx, dir, names, areas, policy, out)
	}
	return m.sweepEach(ctx, dir, names, areas, policy, o, out, saved)
}

// areaSet is the areas a sweep covers, as a set: those named, else every
// area a sweep knows.
func areaSet(named []string) (map[string]bool, error) {
	areas := map[string]bool{}
	for _, a := range named {
		if err := area.Check(a, area.SweepOrder); err != nil {
			return nil, &core.InputError{Msg: err.Error()}
		}
		areas[a] = true
	}
	if len(areas) == 0 {
		for _, a := range area.SweepOrder {
			areas[a] = true
		}
	}
	return areas, nil
}

// dryRun plans the sweep of names and says what it would delete.
func (m *Sweeper) dryRun(ctx context.Context, dir *saferm.Dir, names []string, areas map[string]bool, policy sweep.Policy, out SweepOutcome) (SweepOutcome, error) {
	plan, err := m.planSweep(ctx, dir, names, areas, policy, m.Now())
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

// sweepEach sweeps names one project at a time, each under its own sweep
// lock, taken only while that project is planned and swept: a project that
// holds a sweep up (a huge tree, a slow disk) never holds the others'
// locks. Then it journals storage.swept.
func (m *Sweeper) sweepEach(ctx context.Context, dir *saferm.Dir, names []string, areas map[string]bool, policy sweep.Policy, o SweepOptions, out SweepOutcome, saved *SavedPlan) (SweepOutcome, error) {
	me := core.HolderOf(ctx)
	// Projects the caller named (or its plan did) and another sweep holds
	// are a conflict the caller must hear of, besides being skipped; in a
	// sweep of every project a busy one is only left alone: the other
	// sweep is covering it.
	named := len(o.Projects) > 0
	started := m.Now()
	res := sweep.Result{SweepID: out.SweepID, Evicted: []sweep.Done{}, Skipped: []sweep.Skip{}, PerPolicy: map[string]int{}}
	out.Plan = sweep.Plan{OverSoft: []sweep.OverSoft{}, Evict: []sweep.Eviction{}, Skipped: []sweep.Skip{}, CacheCap: policy.CacheQuotaPerProject, CacheBytes: map[string]uint64{}}
	var done []string
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		lockedAt := time.Now() // this process's clock, as its lease's is
		busy, err := m.Store.LockSweep(ctx, n, m.ClaimFor(ctx))
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
		// Between each pending record and its removal: the lock is still
		// this sweep's only while its lease has held since it was taken.
		fenced := deletion.WithFence(ctx, func() error { return m.Store.LeaseHeldSince(lockedAt) })
		r, err := m.sweepOne(fenced, dir, n, areas, policy, saved, out.SweepID, o, started)
		// Its deletions' version move, once (store.EndSweep).
		m.Store.EndSweep(context.WithoutCancel(ctx), n, me, len(r.res.Evicted) > 0)
		merge(&out.Plan, &res, r)
		if err != nil {
			out.Result = res
			return out, err
		}
		done = append(done, n)
	}
	return m.finish(ctx, out, res, done, saved, started)
}

// merge adds what sweeping one project planned and did to the sweep's.
func merge(plan *sweep.Plan, res *sweep.Result, r sweptOne) {
	plan.Evict = append(plan.Evict, r.plan.Evict...)
	plan.Skipped = append(plan.Skipped, r.plan.Skipped...)
	plan.OverSoft = append(plan.OverSoft, r.plan.OverSoft...)
	maps.Copy(plan.CacheBytes, r.plan.CacheBytes)
	res.Evicted = append(res.Evicted, r.res.Evicted...)
	res.Skipped = append(res.Skipped, r.res.Skipped...)
	res.BytesFreed += r.res.BytesFreed
	for k, v := range r.res.PerPolicy {
		res.PerPolicy[k] += v
	}
}

// finish completes the outcome of a sweep that deleted, the projects it
// swept being names, and journals it as one storage.swept record.
func (m *Sweeper) finish(ctx context.Context, out SweepOutcome, res sweep.Result, names []string, saved *SavedPlan, started time.Time) (SweepOutcome, error) {
	out.OverSoft = out.Plan.OverSoft
	res.Duration = m.Now().Sub(started)
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
	return out, m.Store.InTx(ctx, func(tx *store.Tx) error { return tx.AppendEvent(ctx, "", m.ActorOf(ctx), swept) })
}

// evictionSettling and evictionSettled, when a test sets them, are called
// just before and just after each deletion's settled record is journalled.
var evictionSettling, evictionSettled func(project string, r deletion.Record)

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

func (e *SweepBusyError) Hint() errkind.Hint {
	return errkind.Fix("wait for that sweep to end, then sweep them again (an applied plan is spent: make a new one)")
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
func (m *Sweeper) sweepOne(ctx context.Context, dir *saferm.Dir, n string, areas map[string]bool, policy sweep.Policy, saved *SavedPlan, sweepID string, o SweepOptions, started time.Time) (sweptOne, error) {
	var out sweptOne
	plan, err := m.planSweep(ctx, dir, []string{n}, areas, policy, m.Now())
	if err != nil {
		return out, err
	}
	if saved != nil {
		plan = rederive(saved.Plan, plan, []string{n})
	}
	out.plan = plan
	if err := m.NoteSweepOverSoft(ctx, plan.OverSoft, sweepID); err != nil {
		return out, err
	}
	budget := o.Budget
	if budget > 0 {
		if budget -= m.Now().Sub(started); budget <= 0 {
			budget = time.Nanosecond // spent: every entry is skipped with the reason
		}
	}
	x := m.executor(sweepID, dir, policy, budget)
	x.Stops = lostLock
	if o.Background {
		inventory.Background(func() { out.res = x.Run(ctx, plan) }) // best effort: a sweep at normal priority still sweeps
	} else {
		out.res = x.Run(ctx, plan)
	}
	// What the plan found less what went: the rest is still to be freed.
	err = m.recordReclaimable(context.WithoutCancel(ctx), []sweep.Project{{Name: n}}, areas, plan, out.res.Evicted, m.Now())
	if out.res.Stopped != nil {
		err = &SweepStoppedError{Project: n, Err: out.res.Stopped}
	}
	return out, err
}

// lostLock says whether a deletion's error means the sweep no longer holds
// its project: the lock was taken over, its lease lapsed, or a deletion it
// left pending was settled by the process that took over.
func lostLock(err error) bool {
	var lost *store.LockLostError
	var lapsed *store.LeaseLapsedError
	var settled *store.SettledElsewhereError
	return errors.As(err, &lost) || errors.As(err, &lapsed) || errors.As(err, &settled)
}

// SweepStoppedError is a sweep that stopped part-way because it lost its
// project to another process (lostLock): what it deleted is journalled,
// and it deletes nothing more.
type SweepStoppedError struct {
	Project string
	Err     error
}

func (e *SweepStoppedError) Error() string {
	return fmt.Sprintf("the sweep of %q stopped part-way: %v", e.Project, e.Err)
}

func (e *SweepStoppedError) Unwrap() error { return e.Err }

func (e *SweepStoppedError) Kind() errkind.Kind { return errkind.Conflict }

func (e *SweepStoppedError) Hint() errkind.Hint {
	return errkind.Fix("another process took the project's sweep over (its holder.taken_over event says who and why): " +
		"check this host's link to the store, and sweep again if anything is left")
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
func (m *Sweeper) executor(sweepID string, root *saferm.Dir, policy sweep.Policy, budget time.Duration) *sweep.Executor {
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

func (m *Sweeper) bareExecutor(sweepID string, root *saferm.Dir, policy sweep.Policy, budget time.Duration) *sweep.Executor {
	return &sweep.Executor{SweepID: sweepID, Root: root, Policy: policy, Now: m.Now, Budget: budget,
		Leased: func(ctx context.Context, p string) (bool, error) { return m.Store.Leased(ctx, p, m.Now()) },
		Journal: func(ctx context.Context, p string, r deletion.Record) error {
			r.Holder = core.HolderOf(ctx) // Run's context: the sweep's operation
			if r.State != deletion.StatePending {
				if evictionSettling != nil {
					evictionSettling(p, r)
				}
				err := m.JournalEviction(ctx, p, r)
				if evictionSettled != nil {
					evictionSettled(p, r)
				}
				return err
			}
			leased, err := m.Store.AppendPendingUnlessLeased(ctx, p, m.ActorOf(ctx), r, m.Now())
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

// sweepTargets is the ready projects the sweep covers, and core.RootOwner for
// the root's inbound tree: named, or, in a sweep of every project, when
// inbound is among the areas and the root has the tree (a root initialised
// before it gets it from doctor --fix). A named owner none of whose areas
// is swept is bad input (sweep omni --area inbound, sweep _root --area
// cache).
func (m *Sweeper) sweepTargets(ctx context.Context, o SweepOptions, areas map[string]bool) ([]string, error) {
	if len(o.Projects) > 0 {
		for _, n := range o.Projects {
			if err := m.sweepable(ctx, n); err != nil {
				return nil, err
			}
			if len(sweepAreas(n, areas)) > 0 {
				continue
			}
			if n == core.RootOwner {
				return nil, errkind.WithFieldHint(errkind.Input, &core.InputError{Param: "areas", Msg: fmt.Sprintf("%s owns only the inbound tree, not the areas asked", core.RootOwner)},
					"sweep it with %s inbound, or with no area", "areas")
			}
			return nil, errkind.WithFix(errkind.Input, &core.InputError{Param: "areas", Msg: fmt.Sprintf("project %q has no inbound tree: inbound/ is the root's own, swept as %s", n, core.RootOwner)},
				errkind.Fix("%s", errkind.Do(errkind.OpSweep, core.RootOwner, "areas", area.Inbound)))
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
		if _, ok, err := m.InboundTree(ctx); err != nil {
			return nil, err
		} else if ok {
			names = append(names, core.RootOwner)
		}
	}
	return names, nil
}

// sweepable checks that name is a ready project, or core.RootOwner with its
// inbound tree.
func (m *Sweeper) sweepable(ctx context.Context, name string) error {
	_, err := m.Tree(ctx, name, homeArea(name))
	return err
}

// homeArea is the tree that stands for an owner as a whole: a project's
// workspace, the root's inbound tree.
func homeArea(owner string) string {
	if owner == core.RootOwner {
		return area.Inbound
	}
	return area.Workspace
}

// sweepAreas are the areas of areas that owner has, in sweep order: a
// project's cache, workspace and scratch; core.RootOwner's inbound.
func sweepAreas(owner string, areas map[string]bool) []string {
	var out []string
	for _, a := range area.SweepOrder {
		if areas[a] && (a == area.Inbound) == (owner == core.RootOwner) {
			out = append(out, a)
		}
	}
	return out
}

// ownerPath is where a sweep's skip of a whole owner points.
func ownerPath(owner string) string { return area.TreePath(owner, homeArea(owner)) }

// planSweep walks the trees of the projects and plans.
func (m *Sweeper) planSweep(ctx context.Context, dir *saferm.Dir, names []string, areas map[string]bool, policy sweep.Policy, now time.Time) (sweep.Plan, error) {
	g := &sweep.Gatherer{Root: dir, Globs: policy.TrashGlobs}
	var refused []sweep.Skip
	active, err := m.Store.ActiveLeases(ctx, now)
	if err != nil {
		return sweep.Plan{}, err
	}
	// The quota check reads fresh figures of the projects swept, and only
	// of those: the kernel's on XFS, a walk now on the fallback.
	usage, unmeasured, err := m.SweepUsage(ctx, names)
	if err != nil {
		return sweep.Plan{}, err
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
					t, err = g.TopLevel(a, area.TreePath(core.RootOwner, area.Inbound))
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

// unplannable is the trees of a project left whole for why: no entries,
// only the figures the quota check needs, and the reason in the plan.
func unplannable(name string, areas map[string]bool, usage map[string]core.TreeStatus, why string) []sweep.Tree {
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
