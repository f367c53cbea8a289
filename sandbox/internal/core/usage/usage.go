// Package usage reads every tree's figures for the core beneath which it
// sits: one project's (Show), every tree's (Report, with what the
// snapshots add), the poller's (Usage, kept between calls and read again
// only for the projects whose store version moved), a sweep's fresh ones
// (SweepUsage, the fallback's trees walked in batches and kept as their
// baselines), with the read cache they share (a project's row and
// statuses while its store version stands; the store's change mark), the
// journalling of each limit a reader is the first to see reached
// (crossings: the one write a read may make), and what a report reads of
// the snapshots (growth.go: growth, last activity, a quota escape).
//
// It stands on the store and the kernel's counters the core opened and
// asks the core (Source) for what only the core does: the settings, the
// clock, who acts, the backend object, the walk of a fallback tree. It
// must never walk a tree but through the core, never write but the
// crossings it notes (and, for a sweep's check, the baselines the core
// walks), never import the core, a use case or a shell. The core is its
// only caller.
package usage

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/quota/xfs"
	"github.com/xfsq/xfsq/sandbox/internal/core/figures"
	"github.com/xfsq/xfsq/settings"
	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/sweep"
)

// The figures' vocabulary (sandbox/internal/core/figures).
type (
	Project    = figures.Project
	TreeStatus = figures.TreeStatus
	Read       = figures.Read
)

// Source is what the reads ask of the core.
type Source interface {
	Now() time.Time
	Setting(ctx context.Context, key string) (settings.Value, error)
	ActorOf(ctx context.Context) string
	BackendInfo() figures.Backend
	// ProjectNotFound refuses a project the store does not know.
	ProjectNotFound(name string) error
	// FallbackQuota walks a fallback tree whose baseline is older than
	// maxAge (0: always) and reads it.
	FallbackQuota(ctx context.Context, t store.Tree, maxAge time.Duration) (quota.Quota, time.Time, error)
	// MeasureTree walks a fallback tree for its baseline, counting the
	// writes walk saw in flight as the walk's (the sweep's fresh figures).
	MeasureTree(t store.Tree, walk store.Walk) (quota.Usage, store.WalkSeen, error)
}

// Reads reads the figures of one root's trees.
type Reads struct {
	src     Source
	Store   *store.Store
	xfs     *xfs.FS // the kernel's counters; nil on the fallback
	Backend quota.Backend

	reads     readCache     // see the read cache below
	crossings crossingCache // the limits known recorded as reached
}

// New reads the figures of the trees st records through the backend b
// (kernel, nil on the fallback, is b's kernel side), asking src the rest.
func New(src Source, st *store.Store, kernel *xfs.FS, b quota.Backend) *Reads {
	return &Reads{src: src, Store: st, xfs: kernel, Backend: b}
}

// Forget empties the read cache, for benchmarks of the uncached path.
func (m *Reads) Forget() {
	m.reads.mu.Lock()
	m.reads.projects = nil
	m.reads.mu.Unlock()
	m.reads.usage.mu.Lock()
	u := &m.reads.usage
	u.gen, u.versions, u.byName, u.all, u.trees = store.Generation{}, store.Versions{}, nil, nil, nil
	m.reads.usage.mu.Unlock()
}

// Rereads is how many projects' figures were read from the store rather
// than the cache, for tests of the cache.
func (m *Reads) Rereads() int64 { return m.reads.reread.Load() }

// Show returns one project with its trees' usage and limits, as fresh as
// read asks, of a name the caller checked (RootOwner too: its inbound
// tree, for the changes that return what they changed).
func (m *Reads) Show(ctx context.Context, name string, read Read) (Project, error) {
	var tok readToken
	if !read.Refresh {
		var c cachedProject
		var ok bool
		if c, ok, tok = m.lookup(ctx, name); ok {
			statuses := slices.Clone(c.statuses) // the cache's: stamped below, then the caller's
			now := m.src.Now()
			for i := range statuses {
				if statuses[i].UsageWalkedAt != nil {
					statuses[i].UsageAgeSeconds, statuses[i].Stale = figures.Freshness(*statuses[i].UsageWalkedAt, now)
				}
			}
			if m.xfs != nil {
				var err error
				if statuses, err = m.Status(ctx, c.trees, nil, read); err != nil {
					return Project{}, err
				}
			}
			return Project{Name: c.row.Name, State: c.row.State, CreatedAt: c.row.CreatedAt, Backend: m.src.BackendInfo(), Trees: statuses}, nil
		}
	}
	m.reads.reread.Add(1)
	p, err := m.Store.Project(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return Project{}, m.src.ProjectNotFound(name)
	}
	if err != nil {
		return Project{}, err
	}
	trees, err := m.Store.Trees(ctx, name)
	if err != nil {
		return Project{}, err
	}
	statuses, err := m.Status(ctx, trees, nil, read)
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
	return Project{Name: p.Name, State: p.State, CreatedAt: p.CreatedAt, Backend: m.src.BackendInfo(), Trees: statuses}, nil
}

// Report returns every tree of every project: on XFS from one enumeration
// of the kernel's counters; on the fallback as Read says. Never nil.
func (m *Reads) Report(ctx context.Context, read Read) ([]TreeStatus, error) {
	if m.xfs == nil && !read.Refresh {
		statuses, err := m.readReport(ctx)
		if err != nil {
			return nil, err
		}
		if err := m.GrowthAndActivity(ctx, statuses); err != nil {
			return nil, err
		}
		return statuses, m.Insight(ctx, statuses)
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
			statuses, err = m.Status(ctx, trees, all, read)
			return err
		})
	} else {
		statuses, err = m.Status(ctx, trees, nil, read)
	}
	if err != nil {
		return nil, err
	}
	if err := m.GrowthAndActivity(ctx, statuses); err != nil {
		return nil, err
	}
	return statuses, m.Insight(ctx, statuses)
}

// fallbackRead reads a fallback tree as admission sees it — its last walk,
// plus the ledger and reservations since — without walking or writing.
// Its grace ends are set from the tree's timers, read in the same statement.
func (m *Reads) fallbackRead(ctx context.Context, t store.Tree, grace time.Duration) (quota.Quota, time.Time, error) {
	r, err := m.Store.Read(ctx, store.TreeKey{Project: t.Project, Area: t.Area})
	q, walked := fallbackQuota(t, r, grace)
	return q, walked, err
}

// fallbackQuota is a fallback tree's figures from r, its read.
func fallbackQuota(t store.Tree, r store.TreeRead, grace time.Duration) (quota.Quota, time.Time) {
	q := quota.Quota{ID: t.ProjectID, Limits: r.Limits, Usage: r.Used}
	figures.ApplyGrace(&q, r.BytesSoftSince, r.InodesSoftSince, grace)
	return q, r.WalkedAt.UTC()
}

// StatusOfReads is Status of fallback trees already read as Store.Read
// reads them (reads[i] of trees[i]), grace being soft_grace: what an add
// answers from the reads made with its last write, nothing read again.
func (m *Reads) StatusOfReads(trees []store.Tree, reads []store.TreeRead, grace time.Duration) []TreeStatus {
	now := m.src.Now()
	out := make([]TreeStatus, len(trees))
	for i, t := range trees {
		q, walked := fallbackQuota(t, reads[i], grace)
		out[i] = m.fallbackStatus(t, q, walked, now)
	}
	return out
}

// fallbackStatus is a fallback tree's status from its figures q, as of
// its walk that began at walked.
func (m *Reads) fallbackStatus(t store.Tree, q quota.Quota, walked, now time.Time) TreeStatus {
	var asOf *time.Time
	if !walked.IsZero() { // never walked: how old is unknown
		asOf = &walked
	}
	s := m.treeStatus(t, q, asOf)
	s.UsageAgeSeconds, s.Stale = figures.Freshness(walked, now)
	return s
}

// Status joins recorded trees with their usage and limits. On XFS all
// holds the kernel's figures in ascending ID order (AppendAll), or is nil
// to read each tree on its own. On
// the fallback each tree is read as admission sees it, walked first only
// when r asks.
func (m *Reads) Status(ctx context.Context, trees []store.Tree, all []quota.Quota, r Read) ([]TreeStatus, error) {
	out := make([]TreeStatus, 0, len(trees))
	var grace time.Duration
	if m.xfs == nil && len(trees) > 0 {
		g, err := m.src.Setting(ctx, "soft_grace")
		if err != nil {
			return nil, err
		}
		grace = g.Duration()
	}
	now := m.src.Now()
	for _, t := range trees {
		var q quota.Quota
		var err error
		switch {
		case m.xfs == nil:
			var walked time.Time
			if r.Refresh {
				q, walked, err = m.src.FallbackQuota(ctx, t, 0)
				if err == nil {
					err = m.fallbackGrace(ctx, t, &q, grace)
				}
			} else {
				q, walked, err = m.fallbackRead(ctx, t, grace)
			}
			if err != nil {
				return nil, err
			}
			out = append(out, m.fallbackStatus(t, q, walked, now))
			continue
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
		out = append(out, m.treeStatus(t, q, nil))
	}
	return out, nil
}

// fallbackGrace sets a fallback tree's grace ends from when xfsq saw it go
// over each soft limit, while the figure read is still over it.
func (m *Reads) fallbackGrace(ctx context.Context, t store.Tree, q *quota.Quota, grace time.Duration) error {
	bytesSince, inodesSince, err := m.Store.GraceStarts(ctx, store.TreeKey{Project: t.Project, Area: t.Area})
	if err != nil {
		return err
	}
	figures.ApplyGrace(q, bytesSince, inodesSince, grace)
	return nil
}

// treeStatus is one recorded tree with the usage and limits q in force.
func (m *Reads) treeStatus(t store.Tree, q quota.Quota, asOf *time.Time) TreeStatus {
	rec := figures.Recorded{Project: t.Project, Area: t.Area, Path: t.Path, ProjectID: t.ProjectID, Limits: t.Limits}
	return figures.StatusOf(rec, q, asOf, m.src.BackendInfo())
}

// Usage is Report's usage and limits without the snapshot-derived fields
// (growth, last activity): on XFS the recorded trees and one enumeration of
// the kernel's counters, on the fallback each tree's last walk, ledger and
// reservations, kept between calls (readcache.go) and read again only for
// the projects whose store version moved. It never walks, never writes and
// takes no lock admission takes, so a poller (a metrics scrape) may call it
// as often as it likes. Never nil.
func (m *Reads) Usage(ctx context.Context) ([]TreeStatus, error) {
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
			out, err = m.Status(ctx, u.trees, all, Read{})
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
	now := m.src.Now()
	ages := make([]float64, len(out)) // one block for every tree's age
	for i := range out {
		if t := &out[i]; t.UsageWalkedAt != nil {
			age, stale := figures.Freshness(*t.UsageWalkedAt, now)
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
func (m *Reads) refreshUsage(ctx context.Context, u *usageCache, gen store.Generation) error {
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
		ts, err := m.Status(ctx, trees, nil, Read{})
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
func (m *Reads) readReport(ctx context.Context) ([]TreeStatus, error) {
	usages, grace, err := m.treeUsages(ctx)
	if err != nil {
		return nil, err
	}
	now := m.src.Now()
	out := make([]TreeStatus, 0, len(usages))
	for _, u := range usages {
		s := m.usageStatus(u, grace)
		var walked time.Time
		if s.UsageWalkedAt != nil {
			walked = *s.UsageWalkedAt
		}
		s.UsageAgeSeconds, s.Stale = figures.Freshness(walked, now)
		out = append(out, s)
	}
	return out, nil
}

// readAllUsage reads every fallback tree as admission sees it — the last
// walk, the ledger and reservations since, the grace timers — in one
// statement, grouped by project.
func (m *Reads) readAllUsage(ctx context.Context) (map[string][]TreeStatus, error) {
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
func (m *Reads) treeUsages(ctx context.Context) ([]store.TreeUsage, time.Duration, error) {
	usages, err := m.Store.TreeUsages(ctx)
	if err != nil || len(usages) == 0 {
		return usages, 0, err
	}
	g, err := m.src.Setting(ctx, "soft_grace")
	if err != nil {
		return nil, 0, err
	}
	return usages, g.Duration(), nil
}

// usageStatus is one tree's status from its usage as TreeUsages reads it.
func (m *Reads) usageStatus(u store.TreeUsage, grace time.Duration) TreeStatus {
	var asOf *time.Time
	if !u.WalkedAt.IsZero() {
		asOf = &u.WalkedAt
	}
	q := quota.Quota{ID: u.ProjectID, Limits: u.Limits, Usage: u.Used}
	figures.ApplyGrace(&q, u.BytesSoftSince, u.InodesSoftSince, grace)
	return m.treeStatus(u.Tree, q, asOf)
}

// readCache keeps, per project, what a read without refresh takes from the
// store — the project's row and its trees' statuses on the fallback, the
// rows alone on XFS, whose usage is the kernel's and read every time — for
// as long as that project's store version is unchanged. A server answers
// `admission` before every run of every project; without it each answer
// is several queries, with it at most one cheap lookup.
//
// Two tokens guard a kept answer. The store's generation moves with any
// commit anywhere: while it stands, nothing can have changed and the
// answer is given without a query. When it has moved, the project's own
// version (store.VersionAt, moved by triggers in the committing
// transaction, whoever commits) says whether this project changed: a
// snapshot pass committing walk after walk of other projects costs the
// whole cache one small read per commit (the store follows every
// project's version at once), not a re-read. Both are read before the
// data they guard, so a kept answer is at worst re-read once too often,
// never kept past a change.
type readCache struct {
	mu       sync.Mutex
	projects map[string]cachedProject

	usage usageCache // Usage's whole-root answer

	// marks keeps the store's change mark under the generation it was
	// read at (changeMark).
	marks struct {
		mu  sync.Mutex
		gen store.Generation
		at  store.ChangeMark
	}

	// reread counts the projects read from the store rather than kept,
	// by Show and by Usage: what the tests hold the cache to.
	reread atomic.Int64
}

type cachedProject struct {
	version store.Version    // of the store when the data was read
	gen     store.Generation // the generation at which version was last confirmed
	row     store.Project
	trees   []store.Tree
	// statuses are the fallback's figures, nil on XFS.
	statuses []TreeStatus
}

// readToken is what a miss learned: under which generation and version a
// fresh read may be kept (an unknown gen: it may not).
type readToken struct {
	gen     store.Generation
	version store.Version
}

// generation reads the store's generation, unknown when nothing may be kept.
func (m *Reads) generation(ctx context.Context) store.Generation {
	g, err := m.Store.Generation(ctx)
	if err != nil {
		return store.Generation{}
	}
	return g
}

// lookup returns name's kept answer when it is still right; otherwise the
// token under which the caller's fresh read may be kept. The answer's
// slices are the cache's own: the caller copies what it changes or hands
// out (show copies the statuses it stamps; the trees it only reads).
func (m *Reads) lookup(ctx context.Context, name string) (cachedProject, bool, readToken) {
	gen := m.generation(ctx) // before the reads it guards (store.Generation)
	if !gen.Known() {
		return cachedProject{}, false, readToken{}
	}
	c := &m.reads
	c.mu.Lock()
	p, ok := c.projects[name]
	c.mu.Unlock()
	if ok && p.gen == gen {
		return p, true, readToken{}
	}
	v, err := m.Store.VersionAt(ctx, gen, name)
	if err != nil {
		return cachedProject{}, false, readToken{}
	}
	if ok && p.version == v {
		c.mu.Lock()
		if q, ok := c.projects[name]; ok && q.version == v {
			q.gen = gen
			c.projects[name] = q
		}
		c.mu.Unlock()
		return p, true, readToken{}
	}
	return cachedProject{}, false, readToken{gen: gen, version: v}
}

// keep stores a fresh read of name under tok. An older read finishing
// after a newer one is not kept over it: versions only grow.
func (m *Reads) keep(name string, tok readToken, p cachedProject) {
	if !tok.gen.Known() {
		return
	}
	c := &m.reads
	c.mu.Lock()
	defer c.mu.Unlock()
	if q, ok := c.projects[name]; ok && (q.version.Project > tok.version.Project || q.version.Settings > tok.version.Settings) {
		return
	}
	if c.projects == nil {
		c.projects = map[string]cachedProject{}
	}
	p.gen, p.version = tok.gen, tok.version
	c.projects[name] = p.clone()
}

// clone is p with slices of its own: callers own what they are given, so
// that one caller's change cannot reach the next caller's answer.
func (p cachedProject) clone() cachedProject {
	p.trees, p.statuses = slices.Clone(p.trees), slices.Clone(p.statuses)
	return p
}

// usageCache keeps Usage's reads of the whole root: on the fallback every
// project's statuses, on XFS the recorded trees, each with the version it
// was read at, so that a scrape after a commit re-reads only the projects
// whose version moved.
type usageCache struct {
	mu       store.Lock // one refresh at a time (taken within a request's store budget); guards the fields below
	gen      store.Generation
	versions store.Versions
	byName   map[string][]TreeStatus // the fallback's, per project
	all      []TreeStatus            // byName's, in project order; nil: to be assembled
	at       map[string]int          // where each project's trees start in all
	trees    []store.Tree            // XFS's, every project's
}

// fullUsageRead is how many changed projects make Usage read the whole
// root in one statement rather than project by project (each a few
// statements).
const fullUsageRead = 32

// ChangeMark is the store's change mark, asked of the database only when
// the store's generation moved since it was last asked: under load every
// overview request asking it was a query each, and on SQLite a connection
// opened each beyond the pool's idle two, which put a tail of tens of
// milliseconds on requests that otherwise write cached bytes. The
// generation is read first, so a mark kept under it is never older than
// what the generation stands for (store.Generation).
func (m *Reads) ChangeMark(ctx context.Context) (store.ChangeMark, error) {
	gen := m.generation(ctx)
	c := &m.reads.marks
	c.mu.Lock()
	if gen.Known() && gen == c.gen {
		mark := c.at
		c.mu.Unlock()
		return mark, nil
	}
	c.mu.Unlock()
	mark, err := m.Store.ChangeMark(ctx)
	if err == nil && gen.Known() {
		c.mu.Lock()
		c.gen, c.at = gen, mark
		c.mu.Unlock()
	}
	return mark, err
}

// Every limit a tree reaches is journalled once, by whoever sees it first:
// a write through xfsq (the store, in the write's own transaction), a
// check, a walk, the kernel's counters at a scheduled pass or a scrape, a
// sweep's quota check. Each observer compares what it sees with what this
// process last knew of the recorded states (crossingCache) and goes to the
// store only when they differ; there a compare and set decides which of
// two observers journals it (store.RecordCrossings). It is the one write a
// read may make: a limit reached must reach the journal whoever reads it.

// crossingsTTL is how long the recorded states a process knows are
// trusted before they are read again: another process may have recorded
// a change since, which this one would otherwise take for its own news or
// miss.
const crossingsTTL = time.Minute

// crossingCache is what this process last knew of the recorded crossings.
type crossingCache struct {
	mu     sync.Mutex
	over   map[store.CrossingKey]bool
	readAt time.Time
	// busy: a scrape's recording runs in the background, one at a time.
	busy atomic.Bool
}

// changed lists the trees of rows whose limits differ from what is known
// recorded; ok is false when what is known is too old to say.
func (c *crossingCache) changed(rows []TreeStatus, now time.Time) (out []int, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.over == nil || now.Sub(c.readAt) > crossingsTTL {
		return nil, false
	}
	for i := range rows {
		t := &rows[i]
		over := store.LimitsOver(limitsOf(t), quota.Usage{Bytes: t.UsedBytes, Inodes: t.UsedInodes}, figures.FullWithin(t.Backend))
		k := store.TreeKey{Project: t.Project, Area: t.Area}
		for j, name := range journal.LimitNames {
			if over[j] != c.over[store.CrossingKey{TreeKey: k, Limit: name}] {
				out = append(out, i)
				break
			}
		}
	}
	return out, true
}

func limitsOf(t *TreeStatus) quota.Limits {
	return quota.Limits{BytesSoft: t.BytesSoft, BytesHard: t.BytesHard, InodesSoft: t.InodesSoft, InodesHard: t.InodesHard}
}

// NoteLimits records the crossings rows show that are not recorded yet,
// journalling each one this observer is the first to see.
func (m *Reads) NoteLimits(ctx context.Context, rows []TreeStatus, seenBy string) error {
	if m.Store.ReadOnly() || len(rows) == 0 {
		return nil
	}
	c := &m.crossings
	idx, ok := c.changed(rows, m.src.Now())
	if !ok {
		over, err := m.Store.CrossingStates(ctx)
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.over, c.readAt = over, m.src.Now()
		c.mu.Unlock()
		if idx, _ = c.changed(rows, m.src.Now()); len(idx) == 0 {
			return nil
		}
	}
	if len(idx) == 0 {
		return nil
	}
	var cs []store.Crossing
	c.mu.Lock()
	for _, i := range idx {
		t := &rows[i]
		var bytesGrace, inodesGrace time.Time
		if t.BytesGraceEndsAt != nil {
			bytesGrace = *t.BytesGraceEndsAt
		}
		if t.InodesGraceEndsAt != nil {
			inodesGrace = *t.InodesGraceEndsAt
		}
		for _, x := range store.LimitsCrossings(store.TreeKey{Project: t.Project, Area: t.Area}, limitsOf(t),
			quota.Usage{Bytes: t.UsedBytes, Inodes: t.UsedInodes}, figures.FullWithin(t.Backend), bytesGrace, inodesGrace, seenBy) {
			if x.Over != c.over[x.CrossingKey] {
				cs = append(cs, x)
			}
		}
	}
	c.mu.Unlock()
	if _, err := m.Store.RecordCrossings(ctx, m.src.ActorOf(ctx), cs); err != nil {
		return err
	}
	// Recorded now, by this observer or one before it: either way, the
	// store's state is what was seen.
	c.mu.Lock()
	for _, x := range cs {
		c.over[x.CrossingKey] = x.Over
	}
	c.mu.Unlock()
	return nil
}

// noteLimitsLater is noteLimits for a scrape: it never waits on the store
// when anything is to be recorded (or what is known must be read again),
// but records in the background, one recording at a time; a scrape that
// finds one under way leaves its news to the next.
func (m *Reads) noteLimitsLater(ctx context.Context, rows []TreeStatus, seenBy string) {
	if m.Store.ReadOnly() || len(rows) == 0 {
		return
	}
	if idx, ok := m.crossings.changed(rows, m.src.Now()); ok && len(idx) == 0 {
		return
	}
	if !m.crossings.busy.CompareAndSwap(false, true) {
		return
	}
	rows = append([]TreeStatus(nil), rows...) // the caller's to keep
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer m.crossings.busy.Store(false)
		ctx, cancel := context.WithTimeout(ctx, time.Minute) // no wait on the store is unbounded
		defer cancel()
		m.NoteLimits(ctx, rows, seenBy) // best effort: the next scrape tries again
	}()
}

// kernelOr says who sees usage read now: the kernel's counters on XFS and
// ext4, else what the fallback's reader is.
func (m *Reads) kernelOr(fallback string) string {
	if m.xfs != nil {
		return journal.SeenByKernel
	}
	return fallback
}

// NoteSweepOverSoft records the trees a sweep's quota check found over
// their soft byte limits (it measures bytes only).
func (m *Reads) NoteSweepOverSoft(ctx context.Context, overs []sweep.OverSoft, sweepID string) error {
	if len(overs) == 0 || m.Store.ReadOnly() {
		return nil
	}
	cs := make([]store.Crossing, 0, len(overs))
	for _, o := range overs {
		k := store.CrossingKey{TreeKey: store.TreeKey{Project: o.Project, Area: o.Area}, Limit: journal.LimitBytesSoft}
		cs = append(cs, store.Crossing{CrossingKey: k, Over: true, Exceeded: journal.QuotaExceeded{Area: o.Area, Limit: journal.LimitBytesSoft,
			LimitValue: new(o.Soft), UsedBytes: o.Bytes, BytesSoft: o.Soft, SweepID: sweepID, SeenBy: journal.SeenBySweep}})
	}
	_, err := m.Store.RecordCrossings(ctx, m.src.ActorOf(ctx), cs)
	return err
}

// NoteWalked records the crossings of trees just walked (of area, "" for
// all): on the fallback the walk is their new figure, on XFS and ext4 the
// kernel's counters are read with it.
func (m *Reads) NoteWalked(ctx context.Context, trees []store.Tree, area string) error {
	var walked []store.Tree
	for _, t := range trees {
		if area == "" || t.Area == area {
			walked = append(walked, t)
		}
	}
	if m.xfs != nil { // the kernel's counters: no statement per tree
		rows, err := m.Status(ctx, walked, nil, Read{})
		if err != nil {
			return err
		}
		return m.NoteLimits(ctx, rows, m.kernelOr(journal.SeenByWalk))
	}
	// The fallback's figures of every tree of the host in one statement
	// (readReport), those walked kept: a read per tree was a round trip
	// per tree after a pass that stored its walks in a few.
	all, err := m.readReport(ctx)
	if err != nil {
		return err
	}
	keep := make(map[store.TreeKey]bool, len(walked))
	for _, t := range walked {
		keep[store.TreeKey{Project: t.Project, Area: t.Area}] = true
	}
	rows := all[:0]
	for _, r := range all {
		if keep[store.TreeKey{Project: r.Project, Area: r.Area}] {
			rows = append(rows, r)
		}
	}
	return m.NoteLimits(ctx, rows, m.kernelOr(journal.SeenByWalk))
}

// SweepUsage reads fresh figures of the trees of names for a sweep's quota
// check: the kernel's on XFS; on the fallback each tree walked now and the
// walk recorded as its baseline, then every tree's figures in one
// statement. Besides the walks' own records (a write per tree, each its
// own), the reads are a constant few however many projects are swept.
// A project whose figures cannot be had is in unmeasured, with why.
func (m *Reads) SweepUsage(ctx context.Context, names []string) (usage map[string]TreeStatus, unmeasured map[string]string, err error) {
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
	if m.xfs == nil {
		failed, err := m.walkBaselinesOf(ctx, names, byProject)
		if err != nil {
			return nil, nil, err
		}
		for _, n := range names {
			if e, ok := failed[n]; ok {
				unmeasured[n] = why(e)
			} else {
				measured[n] = true
			}
		}
	}
	for _, n := range names {
		if m.xfs == nil {
			break
		}
		rows, err := m.Status(ctx, byProject[n], nil, Read{Refresh: true})
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
