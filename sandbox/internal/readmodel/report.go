package readmodel

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/sandbox/internal/core"
)

// The orders a report can be sorted in: by project (then area), or
// largest first by bytes used, percent of the hard byte limit, or 24 h growth.
const (
	ReportByProject = "project"
	ReportByUsed    = "used"
	ReportByPercent = "percent"
	ReportByGrowth  = "growth"
	// The words top shares (docs/commands.md): most files first, most
	// recent activity first, soonest full first, most reclaimable first.
	ReportByFiles       = "files"
	ReportByActivity    = "mtime"
	ReportByFullIn      = "eta"
	ReportByReclaimable = "reclaimable"
)

// ReportSorts are the orders ReportOptions.Sort takes.
var ReportSorts = []string{ReportByProject, ReportByUsed, ReportByPercent, ReportByGrowth,
	ReportByFiles, ReportByActivity, ReportByFullIn, ReportByReclaimable}

// ReportOptions say which trees a report shows and in what order; the
// zero value is every tree by project. Both shells take them as they are:
// the CLI from its flags, the server from its query.
type ReportOptions struct {
	// Projects and Areas keep only these (none: all). A project named that
	// has no row is an error: a typo must not read as "all is well".
	Projects, Areas []string
	// Over keeps only trees at or over this percent of their hard byte
	// limit (nil: all; a tree without one never is).
	Over *float64
	// Sort is one of ReportSorts; "": ReportByProject.
	Sort string
	// Check makes CheckFailed say whether any tree shown is at or over a
	// hard limit (bytes or inodes): a monitor's question.
	Check bool
	// Scope, when not nil, is every project the caller may see (a reader
	// limited to some): the others are as absent as a project that does
	// not exist.
	Scope []string
	Read  core.Read
}

// ReportResult is a report: the trees asked for, and what a reader of
// them should be told besides (a tree at a hard limit, the check's
// verdict, the oldest walk on the fallback, the space no tree holds, the
// trees not to take at face value, what the limits promise and the sweep
// policies would free: figures of the rows the report answers, so that no
// shell sums them itself). It is the wire's type (api/v1), which the server
// writes as it is.
type ReportResult = apiv1.Report

// ReportPromise is the wire's (api/v1): the disk's size and what the
// trees shown promise of it.
type ReportPromise = apiv1.ReportPromise

// TreeWarning is a tree whose figure a reader should not take at face
// value (its Detail the tree's drift or escape, as TreeStatus has it);
// each shell words it. The wire's type (api/v1).
type TreeWarning = apiv1.TreeWarning

// TreeWarning kinds.
const (
	// WarnStale: a fallback figure from a walk older than core.SnapshotInterval
	// (or none): writes made outside xfsq since are not counted.
	WarnStale = apiv1.WarnStale
	// WarnDrift: the limits in force differ from the recorded ones.
	WarnDrift = apiv1.WarnDrift
	// WarnEscape: the last walk and the kernel's count disagree.
	WarnEscape = apiv1.WarnEscape
)

// CheckReport validates o as bad input naming the field at fault.
func CheckReport(o ReportOptions) error {
	for _, a := range o.Areas {
		if core.ValidateArea(a) != nil {
			return fieldErrorf("area", "%q: use %s", a, strings.Join(area.All, ", "))
		}
	}
	if o.Over != nil && (*o.Over < 0 || *o.Over != *o.Over) {
		return fieldErrorf("over", "%v: use a percentage, 0 or more (e.g. 90)", *o.Over)
	}
	if o.Sort != "" && !slices.Contains(ReportSorts, o.Sort) {
		return fieldErrorf("sort", "%q: use %s", o.Sort, strings.Join(ReportSorts, ", "))
	}
	return nil
}

// ReportOf is the report o asks for: every tree's usage and limits
// (Report), filtered, sorted and checked.
func (m *Model) ReportOf(ctx context.Context, o ReportOptions) (ReportResult, error) {
	if err := CheckReport(o); err != nil {
		return ReportResult{}, err
	}
	all, err := m.Report(ctx, o.Read)
	if err != nil {
		return ReportResult{}, err
	}
	rows, err := o.apply(all)
	if err != nil {
		return ReportResult{}, err
	}
	res := ReportResult{Backend: m.BackendInfo(), Trees: rows, Warnings: []TreeWarning{}}
	res.AtHardLimit = slices.ContainsFunc(rows, AtHardLimit)
	res.CheckFailed = o.Check && res.AtHardLimit
	for _, t := range rows {
		if !m.IsXFS() && t.UsageWalkedAt != nil && (res.OldestWalkAt == nil || t.UsageWalkedAt.Before(*res.OldestWalkAt)) {
			res.OldestWalkAt = t.UsageWalkedAt
		}
		res.Warnings = append(res.Warnings, treeWarnings(t)...)
	}
	if u, ok, err := m.Unowned(ctx); ok && err == nil {
		res.Unowned = &u
	}
	res.Promise, res.ReclaimableBytes = m.promise(rows)
	return res, nil
}

// promise is what rows' hard byte limits promise of the root's disk (nil
// when its size cannot be read) and what the sweep policies would free in
// them (nil when no row was planned).
func (m *Model) promise(rows []core.TreeStatus) (*ReportPromise, *uint64) {
	var p *ReportPromise
	if total, _, ok := m.DiskSize(); ok {
		p = &ReportPromise{DiskBytes: total, Promised: promisedOf(rows, total)}
	}
	var reclaim uint64
	planned := false
	for _, t := range rows {
		if t.ReclaimableBytes != nil {
			reclaim, planned = reclaim+*t.ReclaimableBytes, true
		}
	}
	if !planned {
		return p, nil
	}
	return p, &reclaim
}

func treeWarnings(t core.TreeStatus) []TreeWarning {
	var out []TreeWarning
	for _, w := range []struct {
		on     bool
		kind   apiv1.WarningKind
		detail string
	}{{t.Stale, WarnStale, ""}, {t.Drift != "", WarnDrift, t.Drift}, {t.Escape != "", WarnEscape, t.Escape}} {
		if w.on {
			out = append(out, TreeWarning{Kind: w.kind, Project: t.Project, Area: t.Area, Detail: w.detail})
		}
	}
	return out
}

// AtHardLimit reports whether a tree is at or over one of its hard limits.
func AtHardLimit(t core.TreeStatus) bool {
	return (t.BytesHard > 0 && t.UsedBytes >= t.BytesHard) || (t.InodesHard > 0 && t.UsedInodes >= t.InodesHard)
}

// OverSoftLimit reports whether a tree is over one of its soft limits.
func OverSoftLimit(t core.TreeStatus) bool {
	return (t.BytesSoft > 0 && t.UsedBytes > t.BytesSoft) || (t.InodesSoft > 0 && t.UsedInodes > t.InodesSoft)
}

// apply keeps the rows asked for, in the order asked for.
func (o ReportOptions) apply(rows []core.TreeStatus) ([]core.TreeStatus, error) {
	if o.Scope != nil {
		rows = slices.DeleteFunc(rows, func(t core.TreeStatus) bool { return !slices.Contains(o.Scope, t.Project) })
	}
	for _, p := range o.Projects {
		if !slices.ContainsFunc(rows, func(t core.TreeStatus) bool { return t.Project == p }) {
			return nil, fieldErrorf("project", "%s: no such project (the project list names them)", strconv.Quote(p))
		}
	}
	out := []core.TreeStatus{}
	for _, t := range rows {
		switch {
		case len(o.Projects) > 0 && !slices.Contains(o.Projects, t.Project):
		case len(o.Areas) > 0 && !slices.Contains(o.Areas, t.Area):
		case o.Over != nil && (t.BytesHard == 0 || t.Percent < *o.Over):
		default:
			out = append(out, t)
		}
	}
	slices.SortStableFunc(out, o.order())
	return out, nil
}

// order compares two rows as o.Sort asks: largest first, but by project.
func (o ReportOptions) order() func(a, b core.TreeStatus) int {
	growth := func(t core.TreeStatus) int64 {
		if t.Growth24hBytes == nil {
			return -1 << 62
		}
		return *t.Growth24hBytes
	}
	return func(a, b core.TreeStatus) int {
		switch o.Sort {
		case ReportByUsed:
			return cmp.Compare(b.UsedBytes, a.UsedBytes)
		case ReportByPercent:
			return cmp.Compare(b.Percent, a.Percent)
		case ReportByGrowth:
			return cmp.Compare(growth(b), growth(a))
		case ReportByFiles:
			return cmp.Compare(b.UsedInodes, a.UsedInodes)
		case ReportByActivity:
			return cmp.Compare(unixOr(b.LastActivityAt), unixOr(a.LastActivityAt))
		case ReportByFullIn:
			return cmp.Compare(etaOr(a.FullInSeconds), etaOr(b.FullInSeconds))
		case ReportByReclaimable:
			return cmp.Compare(valueOr(b.ReclaimableBytes), valueOr(a.ReclaimableBytes))
		}
		return cmp.Or(strings.Compare(a.Project, b.Project), strings.Compare(a.Area, b.Area))
	}
}

// unixOr is t in Unix seconds, or the earliest of all when unknown.
func unixOr(t *time.Time) int64 {
	if t == nil {
		return -1 << 62
	}
	return t.Unix()
}

// etaOr is a full-in, or longer than any when not filling.
func etaOr(s *float64) float64 {
	if s == nil {
		return 1e300
	}
	return *s
}

func valueOr(n *uint64) uint64 {
	if n == nil {
		return 0
	}
	return *n
}

// ReportBackendOnce is r with the backend at its top only, as the API
// answers.
func ReportBackendOnce(r ReportResult) ReportResult {
	r.Trees = core.TreesWithoutBackend(r.Trees)
	return r
}
