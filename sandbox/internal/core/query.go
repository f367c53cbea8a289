package core

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/quota/xfs"
	"github.com/xfsq/xfsq/sandbox/internal/core/figures"
	"github.com/xfsq/xfsq/store"
)

func notFound(name string) error {
	return errkind.WithFix(errkind.NotFound, fmt.Errorf("project %q %w", name, ErrNotFound), errkind.Fix("see %s", errkind.Do(errkind.OpProjectList, "")))
}

// ProjectRecord is a project as the store lists it.
type ProjectRecord = store.Project

// List returns the projects without reading usage.
// The result is never nil: a shell encodes it as [] without thinking.
func (m *Manager) List(ctx context.Context) ([]store.Project, error) {
	ps, err := m.Store.Projects(ctx)
	if ps == nil && err == nil {
		ps = []store.Project{}
	}
	return ps, err
}

// Show returns one project with its trees' usage and limits, as fresh as
// the optional Read asks.
func (m *Manager) Show(ctx context.Context, name string, r ...Read) (Project, error) {
	if err := ValidateName(name); err != nil {
		return Project{}, err
	}
	return m.show(ctx, name, figures.ReadOf(r))
}

// show is Show of a name already checked; RootOwner too (its inbound tree),
// for the changes that return what they changed.
func (m *Manager) show(ctx context.Context, name string, read Read) (Project, error) {
	var tok readToken
	if !read.Refresh {
		var c cachedProject
		var ok bool
		if c, ok, tok = m.lookup(ctx, name); ok {
			statuses := slices.Clone(c.statuses) // the cache's: stamped below, then the caller's
			now := m.now()
			for i := range statuses {
				if statuses[i].UsageAsOf != nil {
					statuses[i].UsageAgeSeconds, statuses[i].Stale = figures.Freshness(*statuses[i].UsageAsOf, now)
				}
			}
			if m.xfs != nil {
				var err error
				if statuses, err = m.status(ctx, c.trees, nil, read); err != nil {
					return Project{}, err
				}
			}
			return Project{Name: c.row.Name, State: c.row.State, CreatedAt: c.row.CreatedAt, Backend: m.BackendInfo(), Trees: statuses}, nil
		}
	}
	m.reads.reread.Add(1)
	p, err := m.Store.Project(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return Project{}, notFound(name)
	}
	if err != nil {
		return Project{}, err
	}
	trees, err := m.Store.Trees(ctx, name)
	if err != nil {
		return Project{}, err
	}
	statuses, err := m.status(ctx, trees, nil, read)
	if err != nil {
		return Project{}, err
	}
	if !read.Refresh {
		c := cachedProject{row: p, trees: trees}
		if m.xfs == nil {
			c.statuses = statuses
		}
		m.keep(name, tok, c)
	}
	return Project{Name: p.Name, State: p.State, CreatedAt: p.CreatedAt, Backend: m.BackendInfo(), Trees: statuses}, nil
}

// Report returns every tree of every project: on XFS from one enumeration
// of the kernel's counters; on the fallback as Read says. Never nil.
func (m *Manager) Report(ctx context.Context, r ...Read) ([]TreeStatus, error) {
	if m.xfs == nil && !figures.ReadOf(r).Refresh {
		statuses, err := m.readReport(ctx)
		if err != nil {
			return nil, err
		}
		if err := m.growthAndActivity(ctx, statuses); err != nil {
			return nil, err
		}
		return statuses, m.insight(ctx, statuses)
	}
	trees, err := m.Store.Trees(ctx, "")
	if err != nil {
		return nil, err
	}
	// A slice in ID order, not All's map: a report or a scrape only joins
	// each tree with its ID, and on 1,000 trees the map inserts cost about
	// what the kernel's own lookups do (docs/benchmarks.md). status copies what
	// it reads, so the slice can be the one WithAll lends.
	var statuses []TreeStatus
	if m.xfs != nil {
		m.xfs.ExpectIDs(len(trees)) // a one-shot report's only pass
		err = m.xfs.WithAll(func(all []quota.Quota) (err error) {
			statuses, err = m.status(ctx, trees, all, figures.ReadOf(r))
			return err
		})
	} else {
		statuses, err = m.status(ctx, trees, nil, figures.ReadOf(r))
	}
	if err != nil {
		return nil, err
	}
	if err := m.growthAndActivity(ctx, statuses); err != nil {
		return nil, err
	}
	return statuses, m.insight(ctx, statuses)
}

// fallbackRead reads a fallback tree as admission sees it — its last walk,
// plus the ledger and reservations since — without walking or writing.
// Its grace ends are set from the tree's timers, read in the same statement.
func (m *Manager) fallbackRead(ctx context.Context, t store.Tree, grace time.Duration) (quota.Quota, time.Time, error) {
	r, err := m.Store.Read(ctx, store.TreeKey{Project: t.Project, Area: t.Area})
	q := quota.Quota{ID: t.ProjectID, Limits: r.Limits, Usage: r.Used}
	figures.ApplyGrace(&q, r.BytesSoftSince, r.InodesSoftSince, grace)
	return q, r.WalkedAt.UTC(), err
}

// status joins recorded trees with their usage and limits. On XFS all
// holds the kernel's figures in ascending ID order (AppendAll), or is nil
// to read each tree on its own. On
// the fallback each tree is read as admission sees it, walked first only
// when r asks.
func (m *Manager) status(ctx context.Context, trees []store.Tree, all []quota.Quota, r Read) ([]TreeStatus, error) {
	out := make([]TreeStatus, 0, len(trees))
	var grace time.Duration
	if m.xfs == nil && len(trees) > 0 {
		g, err := m.setting(ctx, "soft_grace")
		if err != nil {
			return nil, err
		}
		grace = g.Duration()
	}
	now := m.now()
	for _, t := range trees {
		var q quota.Quota
		var asOf *time.Time
		var age *float64
		var stale bool
		var err error
		switch {
		case m.xfs == nil:
			var walked time.Time
			if r.Refresh {
				q, walked, err = m.fallbackQuota(ctx, t, 0)
				if err == nil {
					err = m.fallbackGrace(ctx, t, &q, grace)
				}
			} else {
				q, walked, err = m.fallbackRead(ctx, t, grace)
			}
			if err != nil {
				return nil, err
			}
			if !walked.IsZero() { // never walked: how old is unknown
				asOf = &walked
			}
			age, stale = figures.Freshness(walked, now)
		case all == nil:
			if q, err = m.Backend.Get(t.ProjectID); err != nil {
				return nil, err
			}
		default:
			if i, ok := slices.BinarySearchFunc(all, t.ProjectID, func(q quota.Quota, id quota.ProjectID) int {
				return cmp.Compare(q.ID, id)
			}); ok {
				q = all[i]
			} else {
				q = quota.Quota{ID: t.ProjectID}
			}
		}
		s := m.treeStatus(t, q, asOf)
		s.UsageAgeSeconds, s.Stale = age, stale
		out = append(out, s)
	}
	return out, nil
}

// fallbackGrace sets a fallback tree's grace ends from when xfsq saw it go
// over each soft limit, while the figure read is still over it.
func (m *Manager) fallbackGrace(ctx context.Context, t store.Tree, q *quota.Quota, grace time.Duration) error {
	bytesSince, inodesSince, err := m.Store.GraceStarts(ctx, store.TreeKey{Project: t.Project, Area: t.Area})
	if err != nil {
		return err
	}
	figures.ApplyGrace(q, bytesSince, inodesSince, grace)
	return nil
}

// treeStatus is one recorded tree with the usage and limits q in force.
func (m *Manager) treeStatus(t store.Tree, q quota.Quota, asOf *time.Time) TreeStatus {
	var fullWithin uint64
	if m.xfs != nil && m.xfs.Kind() == xfs.KindExt4 {
		fullWithin = pageSize
	}
	rec := figures.Recorded{Project: t.Project, Area: t.Area, Path: t.Path, ProjectID: t.ProjectID, Limits: t.Limits}
	return figures.StatusOf(rec, q, asOf, m.BackendInfo(), fullWithin)
}

// pageSize is the unit of ext4's delayed-allocation reservations: on ext4
// less room than a page below a hard limit is none.
var pageSize = uint64(os.Getpagesize())

// Usage is Report's usage and limits without the snapshot-derived fields
// (growth, last activity): on XFS the recorded trees and one enumeration of
// the kernel's counters, on the fallback each tree's last walk, ledger and
// reservations, kept between calls (readcache.go) and read again only for
// the projects whose store version moved. It never walks, never writes and
// takes no lock admission takes, so a poller (a metrics scrape) may call it
// as often as it likes. Never nil.
func (m *Manager) Usage(ctx context.Context) ([]TreeStatus, error) {
	u := &m.reads.usage
	// Its holder may wait on the store for its budget: so may its waiters,
	// not longer (a burst of scrapes against a stalled store each waited
	// out all those before it).
	if err := m.Store.LockWithin(ctx, &u.mu); err != nil {
		return nil, err
	}
	defer u.mu.Unlock()
	gen := m.generation(ctx) // before the reads it guards
	fresh := gen.Known() && gen == u.gen
	if !fresh {
		if err := m.refreshUsage(ctx, u, gen); err != nil {
			return nil, err
		}
		u.gen = gen
	}
	if m.xfs != nil {
		var out []TreeStatus
		err := m.xfs.WithAll(func(all []quota.Quota) (err error) { // in ID order, as Report reads them
			out, err = m.status(ctx, u.trees, all, Read{})
			return err
		})
		if err == nil {
			m.noteLimitsLater(ctx, out, journal.SeenByKernel)
		}
		return out, err
	}
	if u.all == nil {
		names := slices.Sorted(maps.Keys(u.byName))
		u.all, u.at = []TreeStatus{}, make(map[string]int, len(names))
		for _, name := range names {
			u.at[name] = len(u.all)
			u.all = append(u.all, u.byName[name]...)
		}
	}
	out := slices.Clone(u.all)
	now := m.now()
	ages := make([]float64, len(out)) // one block for every tree's age
	for i := range out {
		if t := &out[i]; t.UsageAsOf != nil {
			age, stale := figures.Freshness(*t.UsageAsOf, now)
			ages[i], t.Stale = *age, stale
			t.UsageAgeSeconds = &ages[i]
		}
	}
	m.noteLimitsLater(ctx, out, journal.SeenByScrape)
	return out, nil
}

// refreshUsage brings u up to the store: the projects whose version moved
// since u was read are read again (all of them in one statement when many
// did), the others kept. gen was read before; u.mu is held.
func (m *Manager) refreshUsage(ctx context.Context, u *usageCache, gen store.Generation) error {
	vs, err := m.Store.VersionsAt(ctx, gen) // before the data
	if err != nil {
		return err
	}
	if m.xfs != nil {
		if u.trees != nil && maps.Equal(vs.Projects, u.versions.Projects) {
			return nil // the limits and usage are the kernel's, read at each call
		}
		trees, err := m.Store.Trees(ctx, "")
		if err != nil {
			return err
		}
		u.trees, u.versions = trees, vs
		return nil
	}
	var changed []string
	if u.byName != nil && vs.Settings == u.versions.Settings {
		for name, v := range vs.Projects {
			if v != u.versions.Projects[name] {
				changed = append(changed, name)
			}
		}
	}
	if u.byName == nil || vs.Settings != u.versions.Settings || len(changed) > fullUsageRead {
		byName, err := m.readAllUsage(ctx)
		if err != nil {
			return err
		}
		u.byName, u.versions, u.all = byName, vs, nil
		m.reads.reread.Add(int64(len(byName)))
		return nil
	}
	m.reads.reread.Add(int64(len(changed)))
	for _, name := range changed {
		trees, err := m.Store.Trees(ctx, name)
		if err != nil {
			return err
		}
		if len(trees) == 0 {
			delete(u.byName, name)
			u.all = nil
			continue
		}
		ts, err := m.status(ctx, trees, nil, Read{})
		if err != nil {
			return err
		}
		// A project whose trees are the same ones is replaced where it
		// is; one added or with another set of trees reassembles all.
		if at, ok := u.at[name]; ok && u.all != nil && len(u.byName[name]) == len(ts) {
			copy(u.all[at:], ts)
		} else {
			u.all = nil
		}
		u.byName[name] = ts
	}
	u.versions = vs
	return nil
}

// readReport is every fallback tree as admission sees it, in Report's
// order (project, then area), from one statement (Store.TreeUsages)
// rather than a read per tree.
func (m *Manager) readReport(ctx context.Context) ([]TreeStatus, error) {
	usages, grace, err := m.treeUsages(ctx)
	if err != nil {
		return nil, err
	}
	now := m.now()
	out := make([]TreeStatus, 0, len(usages))
	for _, u := range usages {
		s := m.usageStatus(u, grace)
		var walked time.Time
		if s.UsageAsOf != nil {
			walked = *s.UsageAsOf
		}
		s.UsageAgeSeconds, s.Stale = figures.Freshness(walked, now)
		out = append(out, s)
	}
	return out, nil
}

// readAllUsage reads every fallback tree as admission sees it — the last
// walk, the ledger and reservations since, the grace timers — in one
// statement, grouped by project.
func (m *Manager) readAllUsage(ctx context.Context) (map[string][]TreeStatus, error) {
	usages, grace, err := m.treeUsages(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]TreeStatus{}
	for _, u := range usages {
		out[u.Project] = append(out[u.Project], m.usageStatus(u, grace))
	}
	return out, nil
}

// treeUsages is every fallback tree's usage with the soft_grace setting
// its grace ends are counted from.
func (m *Manager) treeUsages(ctx context.Context) ([]store.TreeUsage, time.Duration, error) {
	usages, err := m.Store.TreeUsages(ctx)
	if err != nil || len(usages) == 0 {
		return usages, 0, err
	}
	g, err := m.setting(ctx, "soft_grace")
	if err != nil {
		return nil, 0, err
	}
	return usages, g.Duration(), nil
}

// usageStatus is one tree's status from its usage as TreeUsages reads it.
func (m *Manager) usageStatus(u store.TreeUsage, grace time.Duration) TreeStatus {
	var asOf *time.Time
	if !u.WalkedAt.IsZero() {
		asOf = &u.WalkedAt
	}
	q := quota.Quota{ID: u.ProjectID, Limits: u.Limits, Usage: u.Used}
	figures.ApplyGrace(&q, u.BytesSoftSince, u.InodesSoftSince, grace)
	return m.treeStatus(u.Tree, q, asOf)
}
