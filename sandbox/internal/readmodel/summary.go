package readmodel

import (
	"cmp"
	"slices"
	"strings"

	apiv1 "github.com/xfsq/xfsq/api/v1"
)

// OverviewSummary is the overview without every project's line (the
// server's GET /v1/workspace/storage/summary): the disk, how many projects
// there are, and the few lines an overview page draws — the fullest (the
// SummaryFullest projects most used of their workspace's hard byte limit,
// those without one after, then by bytes) and the top growers (the
// SummaryGrowers that grew most in 24 hours, of those that grew at all).
// At 10,000 projects the whole overview is megabytes a page fetched and
// parsed to draw thirteen of its rows. It is the wire's (api/v1).
type OverviewSummary = apiv1.OverviewSummary

// How many projects a summary lists of each kind.
const (
	SummaryFullest = 5
	SummaryGrowers = 8
)

// SummaryOf is ov's summary over the projects sees keeps (nil: all).
func SummaryOf(ov *Overview, sees func(string) bool) OverviewSummary {
	s := OverviewSummary{GeneratedAt: ov.GeneratedAt, Root: ov.Root, Host: ov.Host, Backend: ov.Backend, Disk: ov.Disk,
		Fullest: []ProjectOverview{}, Growers: []ProjectOverview{}}
	for _, p := range ov.Projects {
		if sees != nil && !sees(p.Project) {
			continue
		}
		s.ProjectsTotal++
		s.Fullest = keepTop(s.Fullest, p, SummaryFullest, fuller)
		if g := p.Growth.Last24h; g != nil && *g > 0 {
			s.Growers = keepTop(s.Growers, p, SummaryGrowers, grewMore)
		}
	}
	return s
}

// Scoped is ov as a reader limited to the projects sees keeps may see it:
// their lines only, and the disk's promise and reclaimable bytes of their
// trees (as a report answers them of the trees it answers) — the sums over
// every tree gave away the others' limits and reclaimable bytes, exactly
// when there is one other. The disk's size, free space and trend are the
// host's, which df shows any tenant. ov is not modified.
func Scoped(ov *Overview, sees func(string) bool) *Overview {
	mine := *ov
	mine.Projects = make([]ProjectOverview, 0, min(len(ov.Projects), 16))
	mine.promised = make([]Promised, 0, cap(mine.Projects))
	var p Promised
	mine.Disk.ReclaimableBytes = 0
	for i, line := range ov.Projects {
		if !sees(line.Project) {
			continue
		}
		var lp Promised // none kept: an overview not assembled here
		if i < len(ov.promised) {
			lp = ov.promised[i]
		}
		mine.Projects = append(mine.Projects, line)
		mine.promised = append(mine.promised, lp)
		p.PromisedBytes += lp.PromisedBytes
		p.UnlimitedTrees += lp.UnlimitedTrees
		mine.Disk.ReclaimableBytes += line.ReclaimableBytes
	}
	if mine.Disk.TotalBytes > 0 {
		p.OvercommitRatio = float64(p.PromisedBytes) / float64(mine.Disk.TotalBytes)
	}
	setPromised(&mine.Disk, p)
	return &mine
}

// keepTop is top with p in its place by before, at most n long: one pass
// over 10,000 projects, no sort of them all.
func keepTop(top []ProjectOverview, p ProjectOverview, n int, before func(a, b *ProjectOverview) int) []ProjectOverview {
	i, _ := slices.BinarySearchFunc(top, p, func(e, t ProjectOverview) int { return before(&e, &t) })
	if i >= n {
		return top
	}
	top = slices.Insert(top, i, p)
	return top[:min(len(top), n)]
}

// fuller orders by fraction of the hard limit used (none counts as 0),
// then bytes, then name: the overview page's "fullest".
func fuller(a, b *ProjectOverview) int {
	used := func(p *ProjectOverview) float64 {
		if p.QuotaUsed == nil {
			return 0
		}
		return *p.QuotaUsed
	}
	return cmp.Or(cmp.Compare(used(b), used(a)), cmp.Compare(b.WorkspaceBytes, a.WorkspaceBytes), strings.Compare(a.Project, b.Project))
}

// grewMore orders by 24 h growth, most first, then name.
func grewMore(a, b *ProjectOverview) int {
	return cmp.Or(cmp.Compare(*b.Growth.Last24h, *a.Growth.Last24h), strings.Compare(a.Project, b.Project))
}
