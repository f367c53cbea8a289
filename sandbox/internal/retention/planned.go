package retention

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/sweep"
)

// A reviewed sweep has one form: a dry run's plan kept in the store
// (SweepOptions.Keep), applied once (SweepOptions.Apply). The CLI hands it
// back as the file --plan-out wrote, the API by its id: two encodings of
// the same stored plan, checked as a whole and re-decided entry by entry
// alike.

// PlanRef names a kept plan in either encoding.
type PlanRef struct {
	ID   string // the id the store keeps it under (the API's plan_id)
	File []byte // the file --plan-out wrote (see ReadPlanFile)
}

// IsZero reports whether r names no plan.
func (r PlanRef) IsZero() bool { return r.ID == "" && r.File == nil }

// KeptPlan is a dry run's plan as the store keeps it.
type KeptPlan struct {
	SavedPlan
	// ExpiresAt is MadeAt + plan_max_age: applying it is refused after.
	ExpiresAt time.Time
	// File is the plan's file encoding, the one --plan-out writes.
	File []byte
}

// keepPlan stores plan, a dry run's of areas (none: all); bound, when set, is
// the projects it may only be applied to.
func (m *Sweeper) keepPlan(ctx context.Context, plan sweep.Plan, areas, bound []string) (*KeptPlan, error) {
	maxAge, err := m.Setting(ctx, "plan_max_age")
	if err != nil {
		return nil, err
	}
	data, sp, err := m.savePlan(ctx, plan, areas, bound)
	if err != nil {
		return nil, err
	}
	return &KeptPlan{SavedPlan: sp, ExpiresAt: sp.MadeAt.Add(maxAge.Duration()), File: data}, nil
}

// planFile is the file encoding of the plan r names: the file itself, or
// what the store keeps under the id. A plan the store does not have is
// refused as a whole, as an unknown file is by checkPlan.
func (m *Sweeper) planFile(ctx context.Context, r PlanRef) ([]byte, error) {
	if r.File != nil {
		return r.File, nil
	}
	rec, err := m.Store.Plan(ctx, r.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, planRefused("this store never made plan %s for host %q (another host's or root's store, or a made-up plan)", r.ID, m.Store.Host)
	}
	if err != nil {
		return nil, err
	}
	if rec.Body == nil {
		return nil, planRefused("plan %s was saved before the store kept plans: apply its file", r.ID)
	}
	return rec.Body, nil
}

// checkBound refuses a plan that was not made for project alone: an
// exclusive sweep of one project applies only a plan kept for it.
func checkBound(data []byte, project string) error {
	var sp SavedPlan
	if err := json.Unmarshal(data, &sp); err != nil {
		return planMalformed("not a plan saved by a dry run of this xfsq")
	}
	if slices.Equal(sp.Projects, []string{project}) {
		return nil
	}
	made := "the projects its entries name"
	if len(sp.Projects) > 0 {
		made = fmt.Sprintf("%q", sp.Projects)
	}
	return planRefused("plan %s was made for %s, not for project %q alone", sp.ID, made, project)
}

// prepareExclusive checks an exclusive sweep of one project before anything
// is done: the project, and the plan it applies, are refused as a whole;
// unless it is a dry run, the project's sweep lock is taken for ctx's
// operation (the sweep takes it again as the same holder), so a project
// busy elsewhere is a Conflict before a plan is spent. It returns the
// plan's file (nil: none) and what releases the lock.
func (m *Sweeper) prepareExclusive(ctx context.Context, o SweepOptions) ([]byte, func(), error) {
	release := func() {}
	if len(o.Projects) != 1 {
		return nil, release, inputErrorf("an exclusive sweep is of one project, not of %q", o.Projects)
	}
	name := o.Projects[0]
	if o.DryRun {
		return nil, release, nil
	}
	if err := m.sweepable(ctx, name); err != nil {
		return nil, release, err
	}
	var data []byte
	if !o.Apply.IsZero() {
		var err error
		if data, err = m.planFile(ctx, o.Apply); err != nil {
			return nil, release, err
		}
		if err := checkBound(data, name); err != nil {
			return nil, release, err
		}
	}
	unlock, err := m.lockSweep(ctx, name)
	if err != nil {
		return nil, release, err
	}
	return data, unlock, nil
}

// lockSweep takes project's sweep lock for ctx's operation ahead of the
// sweep, which takes it again as the same holder: a project busy elsewhere
// is a Conflict for the caller, not a skip in an outcome.
func (m *Sweeper) lockSweep(ctx context.Context, project string) (func(), error) {
	me := core.HolderOf(ctx)
	busy, err := m.Store.LockSweep(ctx, project, m.ClaimFor(ctx))
	if err != nil {
		return nil, err
	}
	if busy != "" {
		return nil, errkind.WithHint(errkind.Conflict, fmt.Errorf("project %q is being swept by another operation (%s)", project, busy),
			"try again when that sweep is done")
	}
	return func() { m.Store.UnlockSweep(context.WithoutCancel(ctx), project, me) }, nil
}
