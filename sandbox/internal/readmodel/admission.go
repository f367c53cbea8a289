package readmodel

import (
	"context"
	"fmt"
	"strconv"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/store"
)

// Admission: whether a run of a project may start, from its trees as the
// core reads them and the core's rule (core.Judge), answered before every
// run; its JSON is written without reflection (json.go).

// Admission says whether a run of a project may start
// (docs/design/README.md#quota-backends, admission): the wire's type
// (api/v1), which the server writes as it is.
type Admission = apiv1.Admission

// Check decides admission from every tree of the project: deny at or over a
// hard limit, or over a soft limit past its grace; warn over a soft limit
// within grace; ok otherwise. Its figures are as fresh as r asks: by
// default a check reads, never walks, however big the project.
func (m *Model) Check(ctx context.Context, name string, r ...core.Read) (Admission, error) {
	p, err := m.Show(ctx, name, r...)
	if err != nil {
		return Admission{}, err
	}
	a := Admission{Project: name, Decision: core.Ok, Backend: p.Backend, Trees: p.Trees}
	if p.State != store.StateReady {
		a.Decision, a.Message = core.Deny, fmt.Sprintf("project %q is %s, not ready: an add or a removal is running or was interrupted (the doctor says which)", name, p.State)
		return a, nil
	}
	now := m.Now()
	worst, speaker := -1, -1
	for i, t := range p.Trees {
		// The worst tree decides; on a tie the workspace speaks. Only
		// its message is worded.
		if r := core.AdmissionRank(t, now); r > worst || (r == worst && t.Area == area.Workspace) {
			worst, speaker = r, i
		}
	}
	if speaker >= 0 {
		t := p.Trees[speaker]
		decision, msg := core.Judge(t, now)
		which := ""
		if t.Area != area.Workspace {
			which = " " + t.Area
		}
		// Concatenated, not Sprintf'd: asked before every run.
		a.Decision, a.Message = apiv1.Decision(decision), "project "+strconv.Quote(name)+which+": "+msg
	}
	m.NoteLimits(ctx, p.Trees, journal.SeenByAdmission) // best effort: the answer stands, the next observer records it
	return a, nil
}

// AdmissionBackendOnce is a with the backend at its top only, as the API
// answers.
func AdmissionBackendOnce(a Admission) Admission {
	a.Trees = core.TreesWithoutBackend(a.Trees)
	return a
}
