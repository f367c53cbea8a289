package project

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/store"
)

// Sweeps by plan id, for shells that cannot hand a file back (the HTTP
// API): PlanSweep makes a dry run's plan and keeps it, content and all, in
// the store; ApplyPlan applies exactly that plan, checked as a whole and
// re-decided entry by entry as --apply does with a file.

// PlannedSweep is a dry run's plan as the store keeps it.
type PlannedSweep struct {
	SavedPlan
	// ExpiresAt is MadeAt + plan_max_age: ApplyPlan refuses it after.
	ExpiresAt time.Time
	// Outcome is the dry run: what would go, what is left alone and why.
	Outcome SweepOutcome
}

// PlanSweep dry-runs o and keeps its plan in the store, under the id that
// ApplyPlan takes. A plan of named projects is bound to them.
func (m *Manager) PlanSweep(ctx context.Context, o SweepOptions) (PlannedSweep, error) {
	if o.Apply != nil {
		return PlannedSweep{}, inputErrorf("a saved plan is applied, not planned again")
	}
	o.DryRun = true
	out, err := m.Sweep(ctx, o)
	if err != nil {
		return PlannedSweep{}, err
	}
	maxAge, err := m.setting(ctx, "plan_max_age")
	if err != nil {
		return PlannedSweep{}, err
	}
	var projects []string
	if len(o.Projects) > 0 {
		projects = slices.Sorted(slices.Values(o.Projects))
	}
	_, sp, err := m.savePlan(ctx, out.Plan, o.Areas, projects)
	if err != nil {
		return PlannedSweep{}, err
	}
	return PlannedSweep{SavedPlan: sp, ExpiresAt: sp.MadeAt.Add(maxAge.Duration()), Outcome: out}, nil
}

// ApplyOptions say where and how ApplyPlan applies a stored plan.
type ApplyOptions struct {
	// Project, if set, is the one project the caller means to sweep: a
	// plan made for any other set of projects is refused.
	Project    string
	Background bool // as SweepOptions.Background
	Budget     time.Duration
}

// ApplyPlan applies the plan PlanSweep (or a --plan-out) kept under id,
// exactly as applying its file would: refused as a whole, deleting
// nothing, when it is for another root, host, store or project, older
// than plan_max_age, made under other settings, or applied already
// (errkind.Unprocessable); each entry decided again and re-checked before
// it goes. A project that another operation is sweeping is refused with
// errkind.Conflict before the plan is used up, so it may be applied once
// that sweep is done.
func (m *Manager) ApplyPlan(ctx context.Context, id string, o ApplyOptions) (SweepOutcome, error) {
	ctx, end := BeginOp(ctx)
	defer end()
	if o.Project != "" {
		if err := m.sweepable(ctx, o.Project); err != nil {
			return SweepOutcome{}, err
		}
	}
	rec, err := m.Store.Plan(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return SweepOutcome{}, planRefused("this store never made plan %s for host %q (another host's or root's store, or a made-up plan)", id, m.Store.Host)
	}
	if err != nil {
		return SweepOutcome{}, err
	}
	if rec.Body == nil {
		return SweepOutcome{}, planRefused("plan %s was saved before the store kept plans: apply its file", id)
	}
	if o.Project != "" {
		var sp SavedPlan
		if err := json.Unmarshal(rec.Body, &sp); err != nil {
			return SweepOutcome{}, fmt.Errorf("plan %s as stored: %w", id, err)
		}
		if !slices.Equal(sp.Projects, []string{o.Project}) {
			made := "the projects its entries name"
			if len(sp.Projects) > 0 {
				made = fmt.Sprintf("%q", sp.Projects)
			}
			return SweepOutcome{}, planRefused("plan %s was made for %s, not for project %q alone", id, made, o.Project)
		}
		unlock, err := m.lockSweep(ctx, o.Project)
		if err != nil {
			return SweepOutcome{}, err
		}
		defer unlock()
	}
	return m.Sweep(ctx, SweepOptions{Apply: rec.Body, Background: o.Background, Budget: o.Budget})
}

// SweepProject sweeps one project now by policy (o.Projects is ignored),
// refused with errkind.Conflict while another operation sweeps it.
func (m *Manager) SweepProject(ctx context.Context, name string, o SweepOptions) (SweepOutcome, error) {
	ctx, end := BeginOp(ctx)
	defer end()
	if o.Apply != nil || o.DryRun {
		return SweepOutcome{}, inputErrorf("SweepProject sweeps now: plan with PlanSweep, apply with ApplyPlan")
	}
	if err := m.sweepable(ctx, name); err != nil {
		return SweepOutcome{}, err
	}
	unlock, err := m.lockSweep(ctx, name)
	if err != nil {
		return SweepOutcome{}, err
	}
	defer unlock()
	o.Projects = []string{name}
	return m.Sweep(ctx, o)
}

// lockSweep takes project's sweep lock for ctx's operation ahead of Sweep,
// which takes it again as the same holder: a project busy elsewhere is a
// Conflict for the caller, not a skip in an outcome.
func (m *Manager) lockSweep(ctx context.Context, project string) (func(), error) {
	me := HolderOf(ctx)
	busy, err := m.Store.LockSweep(ctx, project, me, func(h string) bool { return !holderAlive(h) })
	if err != nil {
		return nil, err
	}
	if busy != "" {
		return nil, errkind.WithHint(errkind.Conflict, fmt.Errorf("project %q is being swept by another operation (%s)", project, busy),
			"try again when that sweep is done")
	}
	return func() { m.Store.UnlockSweep(context.WithoutCancel(ctx), project, me) }, nil
}
