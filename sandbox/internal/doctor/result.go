package doctor

import (
	"context"

	"github.com/xfsq/xfsq/journal"
)

// Result is doctor's findings, and whether drift remains after them.
type Result struct {
	Findings []Finding `json:"findings"`
	// Unresolved: a finding is neither fixed nor only informational.
	Unresolved bool `json:"unresolved"`
}

// Report is Run with its verdict; fix repairs what it can, journalling
// each repair.
func (d *Doctor) Report(ctx context.Context, fix bool) (Result, error) {
	fs, err := d.Run(ctx, fix)
	if err != nil {
		return Result{}, err
	}
	if fs == nil {
		fs = []Finding{}
	}
	return Result{Findings: fs, Unresolved: Unresolved(fs)}, nil
}

// Unresolved reports whether any finding could be fixed but is not.
func Unresolved(findings []Finding) bool {
	for _, f := range findings {
		if f.fixFn != nil && !f.Fixed {
			return true
		}
	}
	return false
}

// repairedPayload is the doctor.repaired record of a finding's fix.
func repairedPayload(f Finding) journal.Repaired {
	return journal.Repaired{Kind: f.Kind, Project: f.Project, Area: f.Area, Path: f.Path, ProjectID: uint32(f.ProjectID),
		Detail: f.Detail, Fix: f.Fix, Fixed: f.Fixed, Error: f.Error}
}
