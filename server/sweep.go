package server

import (
	"errors"
	"log/slog"
	"net/http"
	"regexp"
	"time"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/project"
	"github.com/xfsq/xfsq/sweep"
)

// sweepAPI answers POST /v1/workspace/storage/projects/{id}/sweep
// (operator): a dry run that makes a plan the store keeps under an id, the
// application of exactly such a plan by its id, or, as the CLI's sweep
// PROJECT, a sweep by policy now. The library decides all of it; this
// only maps JSON to one call and the outcome to JSON (docs/design/README.md#output-conventions).
type sweepAPI struct {
	root *project.Root
	log  *slog.Logger
}

func newSweepAPI(root *project.Root, log *slog.Logger) *sweepAPI {
	return &sweepAPI{root: root, log: log}
}

// sweepRequest is the body: {"dry_run": true, "areas": [...]} plans,
// {"plan_id": "pl-…"} applies that plan, {"dry_run": false, "areas":
// [...]} sweeps now. An empty body is refused: nothing is deleted unless
// the caller said which way.
type sweepRequest struct {
	DryRun *bool    `json:"dry_run"`
	Areas  []string `json:"areas"`
	PlanID string   `json:"plan_id"`
}

// planIDPattern is the form of the ids a kept plan gets: a client's typo is
// bad input, an id of that form the store never made is a refused plan.
var planIDPattern = regexp.MustCompile(`^pl-[0-9a-f]{16}$`)

func (r sweepRequest) validate() error {
	switch {
	case r.PlanID == "" && r.DryRun == nil:
		return fieldError("dry_run", `is missing: give "dry_run": true to make a plan, "plan_id" to apply a reviewed one, or "dry_run": false to sweep now`)
	case r.PlanID != "" && r.DryRun != nil:
		return fieldError("plan_id", "applies a reviewed plan as it was made: leave dry_run out with it")
	case r.PlanID != "" && len(r.Areas) > 0:
		return fieldError("areas", "a plan applies the areas it was made for: leave areas out with plan_id")
	case r.PlanID != "" && !planIDPattern.MatchString(r.PlanID):
		return fieldError("plan_id", "is not a plan id: use the plan_id a dry run answered (pl- and 16 hex digits)")
	}
	return nil
}

func fieldError(field, msg string) error {
	return errkind.New(errkind.Input, errors.New(field+" "+msg))
}

// planJSON is a dry run's answer: the plan, kept under plan_id until
// expires_at, and what applying it would delete.
type planJSON struct {
	PlanID       string         `json:"plan_id"`
	Project      string         `json:"project"`
	DryRun       bool           `json:"dry_run"`
	Areas        []string       `json:"areas"`
	MadeAt       time.Time      `json:"made_at"`
	ExpiresAt    time.Time      `json:"expires_at"`
	Entries      []plannedJSON  `json:"entries"`
	PlannedBytes uint64         `json:"planned_bytes"`
	Skipped      []skipJSON     `json:"skipped"`
	OverSoft     []overSoftJSON `json:"over_soft"`
}

type plannedJSON struct {
	Path      string    `json:"path"`
	Area      string    `json:"area"`
	SizeBytes uint64    `json:"size_bytes"`
	NewestAt  time.Time `json:"newest_at"`
	Reason    string    `json:"reason"`
	Policy    string    `json:"policy"`
}

type skipJSON struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

type overSoftJSON struct {
	Area      string `json:"area"`
	UsedBytes uint64 `json:"used_bytes"`
	SoftBytes uint64 `json:"soft_bytes"`
}

// resultJSON is what a sweep did: every deletion made, with the bytes it
// freed, and every entry left alone with why.
type resultJSON struct {
	SweepID         string         `json:"sweep_id"`
	PlanID          string         `json:"plan_id,omitempty"`
	Project         string         `json:"project"`
	DryRun          bool           `json:"dry_run"`
	Deleted         []deletedJSON  `json:"deleted"`
	FreedBytes      uint64         `json:"freed_bytes"`
	Skipped         []skipJSON     `json:"skipped"`
	PerPolicy       map[string]int `json:"per_policy"`
	OverSoft        []overSoftJSON `json:"over_soft"`
	DurationSeconds float64        `json:"duration_seconds"`
	// SettledPending counts deletions of earlier, interrupted operations
	// whose records this sweep settled first.
	SettledPending int `json:"settled_pending"`
}

type deletedJSON struct {
	Path       string `json:"path"`
	FreedBytes uint64 `json:"freed_bytes"`
	Reason     string `json:"reason"`
	Policy     string `json:"policy"`
	// RemovedFiles counts the names unlinked, directories included.
	RemovedFiles uint64 `json:"removed_files"`
	// Partial: part of the entry was left in place (see skipped).
	Partial bool `json:"partial,omitempty"`
}

func (a *sweepAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("id")
	var req sweepRequest
	if err := decodeJSON(w, r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	if err := req.validate(); err != nil {
		a.fail(w, r, err)
		return
	}
	m := a.root.Manager
	switch {
	case req.DryRun != nil && *req.DryRun:
		out, err := m.Sweep(r.Context(), project.SweepOptions{Projects: []string{name}, Areas: req.Areas, DryRun: true, Keep: true, Exclusive: true})
		if err != nil {
			a.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, planOf(name, out.Kept))
	case req.PlanID != "":
		out, err := m.Sweep(r.Context(), project.SweepOptions{Projects: []string{name}, Apply: project.PlanRef{ID: req.PlanID}, Exclusive: true, Background: true})
		if err != nil {
			a.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, resultOf(name, req.PlanID, out))
	default:
		out, err := m.Sweep(r.Context(), project.SweepOptions{Projects: []string{name}, Areas: req.Areas, Exclusive: true, Background: true})
		if err != nil {
			a.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, resultOf(name, "", out))
	}
}

func (a *sweepAPI) fail(w http.ResponseWriter, r *http.Request, err error) {
	failRequest(a.log, w, r, err)
}

func planOf(name string, p *project.KeptPlan) planJSON {
	out := planJSON{PlanID: p.ID, Project: name, DryRun: true, Areas: p.Areas, MadeAt: p.MadeAt, ExpiresAt: p.ExpiresAt,
		Entries: []plannedJSON{}, Skipped: skipsOf(p.Plan.Skipped), OverSoft: overSoftOf(p.Plan.OverSoft)}
	for _, e := range p.Plan.Evict {
		out.Entries = append(out.Entries, plannedJSON{Path: e.Path, Area: e.Area, SizeBytes: e.Bytes, NewestAt: e.Newest.UTC(), Reason: e.Reason, Policy: e.Policy})
		out.PlannedBytes += e.Bytes
	}
	return out
}

func resultOf(name, planID string, o project.SweepOutcome) resultJSON {
	out := resultJSON{SweepID: o.SweepID, PlanID: planID, Project: name, Deleted: []deletedJSON{}, FreedBytes: o.BytesFreed,
		Skipped: skipsOf(o.Skipped), PerPolicy: o.PerPolicy, OverSoft: overSoftOf(o.OverSoft),
		DurationSeconds: o.Duration.Seconds(), SettledPending: o.Resolved}
	if out.PerPolicy == nil {
		out.PerPolicy = map[string]int{}
	}
	for _, d := range o.Evicted {
		out.Deleted = append(out.Deleted, deletedJSON{Path: d.Path, FreedBytes: d.Bytes, Reason: d.Reason, Policy: d.Policy,
			RemovedFiles: d.Entries, Partial: len(d.Left) > 0})
	}
	return out
}

func skipsOf(skips []sweep.Skip) []skipJSON {
	out := make([]skipJSON, 0, len(skips))
	for _, s := range skips {
		out = append(out, skipJSON{Path: s.Path, Reason: s.Reason})
	}
	return out
}

func overSoftOf(over []sweep.OverSoft) []overSoftJSON {
	out := make([]overSoftJSON, 0, len(over))
	for _, o := range over {
		out = append(out, overSoftJSON{Area: o.Area, UsedBytes: o.Bytes, SoftBytes: o.Soft})
	}
	return out
}
