package core

import (
	"context"
	"fmt"

	"github.com/xfsq/xfsq/store"
)

// SweepUsage reads fresh figures of the trees of names for a sweep's quota
// check: the kernel's on XFS; on the fallback each tree walked now and the
// walk recorded as its baseline, then every tree's figures in one
// statement. Besides the walks' own records (a write per tree, each its
// own), the reads are a constant few however many projects are swept.
// A project whose figures cannot be had is in unmeasured, with why.
func (m *Manager) SweepUsage(ctx context.Context, names []string) (usage map[string]TreeStatus, unmeasured map[string]string, err error) {
	all, err := m.Store.Trees(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	byProject := map[string][]store.Tree{}
	for _, t := range all {
		byProject[t.Project] = append(byProject[t.Project], t)
	}
	usage, unmeasured = map[string]TreeStatus{}, map[string]string{}
	why := func(err error) string {
		return fmt.Sprintf("could not be planned, so nothing of the project is swept: usage for the quota check: %v", err)
	}
	measured := map[string]bool{}
	for _, n := range names {
		if m.xfs != nil {
			rows, err := m.status(ctx, byProject[n], nil, Read{Refresh: true})
			if err != nil {
				if ctx.Err() != nil {
					return nil, nil, ctx.Err()
				}
				unmeasured[n] = why(err)
				continue
			}
			for _, r := range rows {
				usage[r.Project+"/"+r.Area] = r
			}
			continue
		}
		if err := m.walkBaselines(ctx, byProject[n]); err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			unmeasured[n] = why(err)
			continue
		}
		measured[n] = true
	}
	if len(measured) == 0 {
		return usage, unmeasured, nil
	}
	byName, err := m.readAllUsage(ctx)
	if err != nil {
		return nil, nil, err
	}
	for n := range measured {
		for _, r := range byName[n] {
			usage[r.Project+"/"+r.Area] = r
		}
	}
	return usage, unmeasured, nil
}

// walkBaselines walks each fallback tree now and records the walk as its
// baseline.
func (m *Manager) walkBaselines(ctx context.Context, trees []store.Tree) error {
	for _, t := range trees {
		if _, err := m.baseline(ctx, t, 0); err != nil {
			return err
		}
	}
	return nil
}
