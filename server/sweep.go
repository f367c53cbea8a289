package server

import (
	"errors"
	"net/http"
	"regexp"
	"sync"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/sweep"
)

// sweepAPI answers POST /v1/workspace/storage/projects/{id}/sweep
// (operator): a dry run that makes a plan the store keeps under an id, the
// application of exactly such a plan by its id, or, as the CLI's sweep
// PROJECT, a sweep by policy now. The library decides all of it; this
// only maps JSON to one call and the outcome to JSON (docs/design/README.md#output-conventions).
type sweepAPI struct {
	root *sandbox.Root
}

func newSweepAPI(root *sandbox.Root) *sweepAPI {
	return &sweepAPI{root: root}
}

// planIDPattern is the form of the ids a kept plan gets: a client's typo is
// bad input, an id of that form the store never made is a refused plan.
// Compiled at first use, not at every command's start (the CLI links
// this package for serve alone).
var planIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^pl-[0-9a-f]{16}$`) })

// validateSweep refuses a body that does not say one way plainly.
func validateSweep(r apiv1.SweepRequest) error {
	switch {
	case r.PlanID == "" && r.DryRun == nil:
		return fieldError("dry_run", `is missing: give "dry_run": true to make a plan, "plan_id" to apply a reviewed one, or "dry_run": false to sweep now`)
	case r.PlanID != "" && r.DryRun != nil:
		return fieldError("plan_id", "applies a reviewed plan as it was made: leave dry_run out with it")
	case r.PlanID != "" && len(r.Areas) > 0:
		return fieldError("areas", "a plan applies the areas it was made for: leave areas out with plan_id")
	case r.PlanID != "" && !planIDPattern().MatchString(r.PlanID):
		return fieldError("plan_id", "is not a plan id: use the plan_id a dry run answered (pl- and 16 hex digits)")
	}
	return nil
}

func fieldError(field, msg string) error {
	return errkind.New(errkind.Input, errors.New(field+" "+msg))
}

func (a *sweepAPI) Sweep(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("id")
	var req apiv1.SweepRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := validateSweep(req); err != nil {
		return err
	}
	m := a.root.Manager
	switch {
	case req.DryRun != nil && *req.DryRun:
		out, err := m.Sweep(r.Context(), sandbox.SweepOptions{Projects: []string{name}, Areas: req.Areas, DryRun: true, Keep: true, Exclusive: true})
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, planOf(name, out.Kept))
	case req.PlanID != "":
		out, err := m.Sweep(r.Context(), sandbox.SweepOptions{Projects: []string{name}, Apply: sandbox.PlanRef{ID: req.PlanID}, Exclusive: true, Background: true})
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, resultOf(name, req.PlanID, out))
	default:
		out, err := m.Sweep(r.Context(), sandbox.SweepOptions{Projects: []string{name}, Areas: req.Areas, Exclusive: true, Background: true})
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, resultOf(name, "", out))
	}
	return nil
}

func planOf(name string, p *sandbox.KeptPlan) apiv1.SweepPlan {
	out := apiv1.SweepPlan{PlanID: p.ID, Project: name, DryRun: true, Areas: p.Areas, MadeAt: p.MadeAt, ExpiresAt: p.ExpiresAt,
		Entries: []apiv1.PlannedEntry{}, Skipped: skipsOf(p.Plan.Skipped), OverSoft: overSoftOf(p.Plan.OverSoft)}
	for _, e := range p.Plan.Evict {
		out.Entries = append(out.Entries, apiv1.PlannedEntry{Path: e.Path, Area: e.Area, SizeBytes: e.Bytes, NewestAt: e.Newest.UTC(), Reason: e.Reason, Policy: e.Policy})
		out.PlannedBytes += e.Bytes
	}
	return out
}

func resultOf(name, planID string, o sandbox.SweepOutcome) apiv1.SweepResult {
	out := apiv1.SweepResult{SweepID: o.SweepID, PlanID: planID, Project: name, Deleted: []apiv1.Deleted{}, FreedBytes: o.BytesFreed,
		Skipped: skipsOf(o.Skipped), PerPolicy: o.PerPolicy, OverSoft: overSoftOf(o.OverSoft),
		DurationSeconds: o.Duration.Seconds(), SettledPending: o.Resolved}
	if out.PerPolicy == nil {
		out.PerPolicy = map[string]int{}
	}
	for _, d := range o.Evicted {
		out.Deleted = append(out.Deleted, apiv1.Deleted{Path: d.Path, FreedBytes: d.Bytes, Reason: d.Reason, Policy: d.Policy,
			RemovedFiles: d.Entries, Partial: len(d.Left) > 0})
	}
	return out
}

func skipsOf(skips []sweep.Skip) []apiv1.SweepSkip {
	out := make([]apiv1.SweepSkip, 0, len(skips))
	for _, s := range skips {
		out = append(out, apiv1.SweepSkip{Path: s.Path, Reason: s.Reason})
	}
	return out
}

func overSoftOf(over []sweep.OverSoft) []apiv1.OverSoft {
	out := make([]apiv1.OverSoft, 0, len(over))
	for _, o := range over {
		out = append(out, apiv1.OverSoft{Area: o.Area, UsedBytes: o.Bytes, SoftBytes: o.Soft})
	}
	return out
}
