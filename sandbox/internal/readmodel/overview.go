package readmodel

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/health"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/store"
)

// Overview is the storage of the whole root at a glance (the server's
// GET /v1/workspace/storage): each project's usage from the kernel's
// counters or the fallback's ledger, its largest paths, growth and last
// activity from the snapshots. Its members are the wire's (api/v1); it is
// not the wire's type itself, since it keeps beside its lines what the
// wire does not show: what each project's trees promise (promised), for
// the disk's promise to a reader limited to some projects (Scoped).
type Overview struct {
	// GeneratedAt stays the first member: the server's validator is over
	// the rest, which is what changes when a figure does.
	GeneratedAt time.Time         `json:"generated_at"`
	Root        string            `json:"root"`
	Host        string            `json:"host"`
	Backend     health.Backend    `json:"backend"`
	Disk        OverviewDisk      `json:"disk"`
	Projects    []ProjectOverview `json:"projects"`

	// promised is, for each of Projects at the same index, what the hard
	// byte limits of all its trees promise (no ratio): a limited reader's
	// disk is of its projects' (Scoped), not shown on the line.
	promised []Promised
}

// The overview's parts are the wire's (api/v1), which the server encodes
// as they are: the disk holding the root (OverviewDisk: its free space as
// statfs's f_bavail, its trend, what the sweep policies would free, what
// the hard limits promise of it), one project's line (ProjectOverview:
// its workspace's and cache's usage, the workspace's limits, its largest
// top-level paths, growth, last activity, the soonest full-in of its
// trees), one of a tree's largest entries (TopPath), and the workspace's
// change in allocated bytes between complete walks (Growth: null until a
// walk that old exists).
type (
	OverviewDisk    = apiv1.OverviewDisk
	ProjectOverview = apiv1.ProjectOverview
	TopPath         = apiv1.TopPath
	Growth          = apiv1.Growth
)

// OverviewOptions say how fresh an overview must be.
type OverviewOptions struct {
	// Refresh snapshots the trees of Projects now (walks, at background
	// priority) and assembles the answer from that. Refreshes of the same
	// trees share one walk: a caller that asks while one is under way waits
	// for its result, and one that asks within the refresh_window setting
	// of the last one's end gets the answer that walk made, without walking
	// again. A refresh of every tree serves a narrower one too.
	Refresh bool
	// Projects limits a refresh to these projects' trees (a caller who
	// may see only them must not make the server walk the others); nil:
	// every tree, the root's inbound tree too. A name that is no project
	// is skipped.
	Projects []string
	// MaxAge is the age at which a cached answer is made again even
	// though nothing in the store changed (the kernel's counters and the
	// free space move without it); until the new one is ready the old one
	// is given. On a kernel backend it is assembled again; on the
	// fallback, whose every tree's figure is the store's, only the disk's
	// figures are read again (restamped) until it is OverviewRebuildAge
	// old. 0 is DefaultOverviewMaxAge.
	MaxAge time.Duration
}

// DefaultOverviewMaxAge is how long an overview is reused as it is while
// the store records no change.
const DefaultOverviewMaxAge = 5 * time.Second

// OverviewRebuildAge is how old a fallback overview's tree figures may
// grow while this host's change mark stands (each MaxAge only its disk
// figures and generated_at are made again): what moves without the store
// there is time alone — a full-in figure counting down, a growth window
// sliding. Assembling at 10,000 projects costs seconds of CPU, which
// every MaxAge was half a core for a server a dashboard watches.
const OverviewRebuildAge = time.Minute

// overviewTopPaths is how many of its largest paths each project shows;
// keptTopPaths how many are kept of each snapshot, so that as many are
// left to show when a sweep deleted some since.
const (
	overviewTopPaths = 5
	keptTopPaths     = 16
)

// overviewGoneReadLimit bounds the deletion records an overview reads (the
// newest): those since each workspace's last snapshot, an hour's at most
// while the scheduled pass runs.
const overviewGoneReadLimit = 20000

// overviewCache is the last overview assembled, with the store's change
// mark it was read at, and the flights in progress.
type overviewCache struct {
	mu   sync.Mutex
	last *Overview
	mark store.ChangeMark
	// assembledAt is when last's tree figures were read from the store
	// (a restamp keeps it: OverviewRebuildAge).
	assembledAt time.Time
	assemble    *flight // a plain assembly in progress
	// refreshes are the refreshes by scope (refreshScope): the one in
	// progress and when the last one ended.
	refreshes map[string]*refreshState
	// topPaths are each workspace's largest paths, kept by the time of the
	// snapshot they were read from: parsing a stored tree is the dear part.
	topPaths map[string]cachedTop

	walkHook func() // tests: called as a refresh starts its walk
}

// refreshState is one scope's refresh: in flight, or ended at doneAt.
type refreshState struct {
	flight *flight
	doneAt time.Time
}

// refreshScope names the trees a refresh walks: "" is every tree.
func refreshScope(projects []string) string {
	if projects == nil {
		return ""
	}
	names := slices.Clone(projects)
	slices.Sort(names)
	return "projects:" + strings.Join(slices.Compact(names), ",")
}

type cachedTop struct {
	at  time.Time
	top []TopPath
}

// flight is one computation that several callers wait for.
type flight struct {
	done    chan struct{}
	ov      *Overview
	err     error
	waiters int // callers that joined it after it started (tests)
}

// Overview answers from the cached overview while the store has recorded
// no change since it was assembled; otherwise it assembles a new one
// (without walking: the kernel's counters or the fallback's last walk plus
// ledger, and the snapshots), one assembly at a time for all callers, and
// waits for it. An answer o.MaxAge old is still given, and a new one is
// assembled in the background meanwhile, so that no caller waits for the
// figures only the kernel moved. o.Refresh walks first.
//
// The answer is shared by every caller until the next one replaces it: it
// must not be modified. A limited caller filters a copy of Projects.
func (m *Model) Overview(ctx context.Context, o OverviewOptions) (*Overview, error) {
	maxAge := cmp.Or(o.MaxAge, DefaultOverviewMaxAge)
	c := &m.cache
	if o.Refresh {
		f, err := m.refreshFlight(ctx, o.Projects)
		if err != nil || f == nil {
			if err != nil {
				return nil, err
			}
			// Walked within the window: that walk's figures, as a plain
			// overview assembles them.
			return m.Overview(ctx, OverviewOptions{MaxAge: o.MaxAge})
		}
		return f.wait(ctx)
	}
	mark, err := m.ChangeMark(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	last, assembledAt, fresh := c.last, c.assembledAt, c.last != nil && c.mark == mark
	c.mu.Unlock()
	if !fresh {
		return m.overviewFlight(ctx, &c.assemble, m.assembleOverview).wait(ctx)
	}
	if time.Since(last.GeneratedAt) >= maxAge {
		compute := m.assembleOverview
		if !m.IsXFS() && time.Since(assembledAt) < OverviewRebuildAge {
			compute = func(ctx context.Context, at store.ChangeMark) (*Overview, error) {
				return m.restampOverview(ctx, at, last, mark)
			}
		}
		m.overviewFlight(ctx, &c.assemble, compute) // not waited for
	}
	return last, nil
}

// restampOverview is last with its disk's figures read again and stamped
// now, sharing everything else with it (the server's encoding of the
// projects too): while this host's change mark is the one last was
// assembled at (lastMark), the fallback's tree figures are what the store
// says. A mark that moved meanwhile (at, read before this) assembles
// afresh.
func (m *Model) restampOverview(ctx context.Context, at store.ChangeMark, last *Overview, lastMark store.ChangeMark) (*Overview, error) {
	if at != lastMark {
		return m.assembleOverview(ctx, at)
	}
	now := time.Now().UTC().Truncate(time.Second)
	ov := *last
	ov.GeneratedAt = now
	var st unix.Statfs_t
	if err := unix.Statfs(m.Root, &st); err == nil {
		ov.Disk.TotalBytes, ov.Disk.FreeBytes = st.Blocks*uint64(st.Bsize), st.Bavail*uint64(st.Bsize)
	}
	ov.Disk.FullInSeconds = nil
	ov.Disk.OvercommitRatio = 0
	if ov.Disk.TotalBytes > 0 {
		ov.Disk.OvercommitRatio = float64(ov.Disk.PromisedBytes) / float64(ov.Disk.TotalBytes)
	}
	if err := m.diskFullIn(ctx, &ov.Disk, now); err != nil {
		return nil, err
	}
	return &ov, nil
}

// RefreshShared walks name's trees for a reader who asks for fresh
// figures (admission?refresh=1), as an overview's refresh does and sharing
// its walks: one under way of this project or of every tree is waited for,
// one ended within the refresh_window setting serves, so a reader asking
// again and again makes the server walk once per window. On XFS nothing
// walks: the kernel's counters are current.
func (m *Model) RefreshShared(ctx context.Context, name string) error {
	// A name that is no project never reaches the flights: their scopes
	// are kept, and a reader could add one per name it makes up.
	if _, err := m.Show(ctx, name); err != nil || m.IsXFS() {
		return err
	}
	f, err := m.refreshFlight(ctx, []string{name})
	if err != nil || f == nil {
		return err
	}
	_, err = f.wait(ctx)
	return err
}

// refreshFlight is the refresh of projects' trees to wait for: one under
// way of the same scope or of every tree, else a new one; nil when one of
// those ended within the refresh_window setting, so nothing need walk.
func (m *Model) refreshFlight(ctx context.Context, projects []string) (*flight, error) {
	window, err := m.Setting(ctx, "refresh_window")
	if err != nil {
		return nil, fmt.Errorf("read refresh_window: %w", err)
	}
	scope := refreshScope(projects)
	projects = slices.Clone(projects)
	c := &m.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refreshes == nil {
		c.refreshes = map[string]*refreshState{}
	}
	for _, sc := range []string{scope, ""} {
		st := c.refreshes[sc]
		if st == nil {
			continue
		}
		if st.flight != nil {
			st.flight.waiters++
			return st.flight, nil
		}
		if !st.doneAt.IsZero() && time.Since(st.doneAt) < window.Duration() {
			return nil, nil
		}
	}
	st := c.refreshes[scope]
	if st == nil {
		st = &refreshState{}
		c.refreshes[scope] = st
	}
	return m.startFlightLocked(ctx, &st.flight, func(ctx context.Context, mark store.ChangeMark) (*Overview, error) {
		if c.walkHook != nil {
			c.walkHook()
		}
		if err := m.snapshotScope(ctx, projects); err != nil {
			return nil, err
		}
		ov, err := m.assembleOverview(ctx, mark)
		if err == nil {
			c.mu.Lock()
			st.doneAt = time.Now()
			c.mu.Unlock()
		}
		return ov, err
	}), nil
}

// snapshotScope walks the trees of projects (nil: every tree), skipping a
// name that is no project: a limited reader's token may name one that
// was removed, or is yet to be added.
func (m *Model) snapshotScope(ctx context.Context, projects []string) error {
	walk := inventory.Options{Background: true}
	if projects == nil {
		_, err := m.Snapshot(ctx, core.SnapshotOptions{Walk: walk})
		return err
	}
	trees, err := m.Store.Trees(ctx, "")
	if err != nil {
		return err
	}
	var existing []string
	for _, t := range trees {
		if t.Project != core.RootOwner && slices.Contains(projects, t.Project) && !slices.Contains(existing, t.Project) {
			existing = append(existing, t.Project)
		}
	}
	if len(existing) == 0 {
		return nil
	}
	_, err = m.Snapshot(ctx, core.SnapshotOptions{Projects: existing, Walk: walk})
	return err
}

// overviewFlight starts compute unless a flight of its kind is under way,
// which it joins instead. The computation runs on its own goroutine,
// detached from the caller's cancellation (other callers may be waiting
// for it); a caller that gives up returns at once.
func (m *Model) overviewFlight(ctx context.Context, slot **flight, compute func(context.Context, store.ChangeMark) (*Overview, error)) *flight {
	m.cache.mu.Lock()
	defer m.cache.mu.Unlock()
	return m.startFlightLocked(ctx, slot, compute)
}

// startFlightLocked is overviewFlight with the cache's lock held.
func (m *Model) startFlightLocked(ctx context.Context, slot **flight, compute func(context.Context, store.ChangeMark) (*Overview, error)) *flight {
	c := &m.cache
	if f := *slot; f != nil {
		f.waiters++
		return f
	}
	f := &flight{done: make(chan struct{})}
	*slot = f
	go func() {
		ctx := context.WithoutCancel(ctx)
		// The mark is read before the figures: a change made meanwhile
		// makes the next caller assemble again rather than be missed.
		mark, err := m.ChangeMark(ctx)
		var ov *Overview
		if err == nil {
			ov, err = compute(ctx, mark)
		}
		c.mu.Lock()
		f.ov, f.err = ov, err
		if err == nil && (c.last == nil || !ov.GeneratedAt.Before(c.last.GeneratedAt)) {
			if c.last == nil || !sameTrees(ov, c.last) {
				c.assembledAt = time.Now()
			}
			c.last, c.mark = ov, mark
		}
		*slot = nil
		c.mu.Unlock()
		close(f.done)
	}()
	return f
}

// sameTrees says whether a and b share their projects' figures (one is
// the other restamped).
func sameTrees(a, b *Overview) bool {
	return len(a.Projects) > 0 && len(a.Projects) == len(b.Projects) && &a.Projects[0] == &b.Projects[0]
}

func (f *flight) wait(ctx context.Context) (*Overview, error) {
	select {
	case <-f.done:
		return f.ov, f.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// assembleOverview reads every tree's status (no walk) and the snapshots.
// (The mark, read before, is the restamp's.)
func (m *Model) assembleOverview(ctx context.Context, _ store.ChangeMark) (*Overview, error) {
	now := time.Now().UTC().Truncate(time.Second)
	rows, err := m.Report(ctx)
	if err != nil {
		return nil, err
	}
	projects, err := m.List(ctx)
	if err != nil {
		return nil, err
	}
	ov := &Overview{GeneratedAt: now, Root: m.Root, Host: m.Store.Host,
		Backend: health.Backend{Kind: m.BackendInfo().Kind, Enforced: m.IsXFS()}, Projects: make([]ProjectOverview, 0, len(projects))}
	if reason, ok := m.UnsupportedReason(); ok {
		ov.Backend.Kind, ov.Backend.Reason = "fallback", reason
	}
	var st unix.Statfs_t
	if err := unix.Statfs(m.Root, &st); err == nil {
		ov.Disk = OverviewDisk{TotalBytes: st.Blocks * uint64(st.Bsize), FreeBytes: st.Bavail * uint64(st.Bsize)}
	}
	if u, ok, err := m.Unowned(ctx); err != nil {
		return nil, err
	} else if ok {
		ov.Disk.UnownedBytes, ov.Disk.OtherIDsBytes = &u.UnownedBytes, &u.OtherIDsBytes
	}
	index := make(map[string]int, len(projects))
	for _, p := range projects {
		index[p.Name] = len(ov.Projects)
		ov.Projects = append(ov.Projects, ProjectOverview{Project: p.Name, TopPaths: []TopPath{}})
		ov.promised = append(ov.promised, Promised{})
	}
	if err := m.overviewInsight(ctx, ov, rows, now); err != nil {
		return nil, err
	}
	for _, r := range rows {
		i, ok := index[r.Project]
		if !ok {
			continue // added since the report was read
		}
		p := &ov.Projects[i]
		projectInsight(p, &ov.promised[i], r)
		switch r.Area {
		case area.Cache:
			p.CacheBytes = r.UsedBytes
		case area.Workspace:
			p.WorkspaceBytes, p.WorkspaceFiles, p.QuotaBytes, p.QuotaSoftBytes = r.UsedBytes, r.UsedInodes, r.BytesHard, r.BytesSoft
			if r.BytesHard > 0 {
				used := float64(r.UsedBytes) / float64(r.BytesHard)
				p.QuotaUsed = &used
			}
			p.Growth = Growth{Last24h: r.Growth24hBytes, Last7d: r.Growth7dBytes}
			p.LastActivityAt, p.UsageAsOf = r.LastActivityAt, r.UsageWalkedAt
		}
	}
	tops, err := m.topPaths(ctx, rows)
	if err != nil {
		return nil, err
	}
	for name, top := range tops {
		if i, ok := index[name]; ok {
			ov.Projects[i].TopPaths = top
		}
	}
	m.cache.mu.Lock()
	for name := range m.cache.topPaths {
		if _, ok := index[name]; !ok {
			delete(m.cache.topPaths, name) // a removed project's
		}
	}
	m.cache.mu.Unlock()
	return ov, nil
}

// overviewInsight fills the disk's trend, promises and reclaimable bytes.
func (m *Model) overviewInsight(ctx context.Context, ov *Overview, rows []core.TreeStatus, now time.Time) error {
	d := &ov.Disk
	setPromised(d, promisedOf(rows, d.TotalBytes))
	for _, r := range rows {
		if r.ReclaimableBytes != nil {
			d.ReclaimableBytes += *r.ReclaimableBytes
		}
	}
	return m.diskFullIn(ctx, d, now)
}

// diskFullIn fills the disk's full-in at the scheduled passes' trend.
func (m *Model) diskFullIn(ctx context.Context, d *OverviewDisk, now time.Time) error {
	if d.TotalBytes == 0 {
		return nil
	}
	t, err := m.DiskTrend(ctx, d.TotalBytes, d.FreeBytes, now)
	if err != nil {
		return err
	}
	if t.FullIn != nil {
		secs := t.FullIn.Seconds()
		d.FullInSeconds = &secs
	}
	return nil
}

// projectInsight adds one tree's row to its project's line and to what
// the project's trees promise.
func projectInsight(p *ProjectOverview, promised *Promised, r core.TreeStatus) {
	if r.BytesHard == 0 {
		promised.UnlimitedTrees++
	} else {
		promised.PromisedBytes += r.BytesHard
	}
	if r.ReclaimableBytes != nil {
		p.ReclaimableBytes += *r.ReclaimableBytes
	}
	if r.FullInSeconds != nil && (p.FullInSeconds == nil || *r.FullInSeconds < *p.FullInSeconds) {
		p.FullInSeconds, p.FullInArea = r.FullInSeconds, r.Area
	}
}

// topPaths are each workspace's largest top-level entries from its last
// snapshot, each parsed once per snapshot, less what the journal says was
// deleted since (a sweep, a files rm): no view lists a path that is gone
// until the next walk. Three statements however many projects (when each
// snapshot was taken, the trees not parsed yet, the deletions since).
func (m *Model) topPaths(ctx context.Context, rows []core.TreeStatus) (map[string][]TopPath, error) {
	times, err := m.Store.StoredTreeTimes(ctx, area.Workspace)
	if err != nil {
		return nil, err
	}
	c := &m.cache
	out := make(map[string][]TopPath, len(times))
	var stale []string
	c.mu.Lock()
	for name, at := range times {
		if cached, hit := c.topPaths[name]; hit && cached.at.Equal(at) {
			out[name] = cached.top
		} else {
			stale = append(stale, name)
		}
	}
	c.mu.Unlock()
	if len(stale) > 0 {
		slices.Sort(stale)
		trees, err := m.Store.LatestTrees(ctx, area.Workspace, stale)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		if c.topPaths == nil {
			c.topPaths = map[string]cachedTop{}
		}
		for name, st := range trees {
			top := parseTopPaths(st.Tree)
			out[name] = top
			c.topPaths[name] = cachedTop{at: st.At, top: top}
		}
		c.mu.Unlock()
	}
	gone, err := m.goneFromWorkspaces(ctx, rows)
	if err != nil {
		return nil, err
	}
	for name, top := range out {
		out[name] = withoutGonePaths(top, gone[name])
	}
	return out, nil
}

// goneFromWorkspaces is, per project, the paths (relative to its
// workspace) deleted since its workspace's last snapshot, with the bytes
// each freed: one read for every project.
func (m *Model) goneFromWorkspaces(ctx context.Context, rows []core.TreeStatus) (map[string][]TopPath, error) {
	evs, err := m.Store.EvictedSinceSnapshots(ctx, area.Workspace, overviewGoneReadLimit)
	if err != nil || len(evs) == 0 {
		return nil, err
	}
	dirs := map[string]string{}
	for _, r := range rows {
		if r.Area == area.Workspace {
			dirs[r.Project] = r.Path
		}
	}
	out := map[string][]TopPath{}
	for _, e := range evs {
		p, err := e.Decode()
		ev, ok := p.(journal.Evicted)
		if err != nil || !ok || ev.Area != area.Workspace || ev.State != journal.StateDone {
			continue
		}
		dir, ok := dirs[e.Project]
		if !ok {
			continue
		}
		if rel, ok := strings.CutPrefix(ev.Path, dir+"/"); ok && rel != "" {
			out[e.Project] = append(out[e.Project], TopPath{Path: rel, Bytes: ev.Bytes})
		}
	}
	return out, nil
}

// withoutGonePaths is top less the deleted paths: an entry at or under
// one is dropped, a directory above one loses the bytes its removal
// freed; the largest overviewTopPaths of what is left.
func withoutGonePaths(top, gone []TopPath) []TopPath {
	if len(gone) == 0 {
		return top[:min(len(top), overviewTopPaths)]
	}
	out := make([]TopPath, 0, len(top))
	for _, t := range top {
		if slices.ContainsFunc(gone, func(g TopPath) bool { return under(t.Path, g.Path) }) {
			continue
		}
		for _, g := range gone {
			if under(g.Path, t.Path) {
				t.Bytes -= min(t.Bytes, g.Bytes)
			}
		}
		out = append(out, t)
	}
	sortTopPaths(out)
	return out[:min(len(out), overviewTopPaths)]
}

func sortTopPaths(top []TopPath) {
	slices.SortStableFunc(top, func(a, b TopPath) int { return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), strings.Compare(a.Path, b.Path)) })
}

// parseTopPaths is a stored tree's largest top-level entries.
func parseTopPaths(b []byte) []TopPath {
	top := []TopPath{}
	root, files, err := inventory.ParseStored(b)
	if err != nil || root == nil {
		return top
	}
	// The stored tree's nodes are directories; a file at the top is
	// among the tree's largest files if it is among its largest paths.
	for _, ch := range root.Children {
		top = append(top, TopPath{Path: ch.Path, Bytes: ch.SizeBytes})
	}
	for _, f := range files {
		if !strings.Contains(f.Path, "/") {
			top = append(top, TopPath{Path: f.Path, Bytes: f.SizeBytes})
		}
	}
	sortTopPaths(top)
	return top[:min(len(top), keptTopPaths)]
}

// ProjectStorage is one project's storage in detail (the server's GET
// /v1/workspace/storage/projects/{id}): each tree's usage and limits, and
// its tree of sizes and mtimes with its largest files from the last
// snapshot.
type ProjectStorage struct {
	Project string        `json:"project"`
	Backend core.Backend  `json:"backend"`
	Trees   []TreeStorage `json:"trees"`
}

// TreeStorage is one tree of a project: its status (usage, limits, growth)
// and its last snapshot. Without a snapshot (none taken yet) SnapshotAt and
// Tree are null and TopFiles is []: the usage is still the kernel's or the
// ledger's, and the next snapshot (the hourly pass, or a refresh of the
// overview) fills the rest.
type TreeStorage struct {
	core.TreeStatus
	SnapshotAt *time.Time       `json:"snapshot_at"`
	Partial    bool             `json:"partial"` // the snapshot's walk ran out of its budget
	Tree       *inventory.Node  `json:"tree"`
	TopFiles   []inventory.File `json:"top_files"`
}

// DefaultDetailDepth is how deep ProjectStorage shows a tree by default.
const DefaultDetailDepth = 3

// ProjectStorage reads a project's trees to depth (0: DefaultDetailDepth;
// 1 to inventory.MaxDepth) from their last snapshots, walking nothing. A
// snapshot taken to a lesser depth shows what it kept. What the journal
// says was deleted since a snapshot (a sweep, a files rm) is taken out of
// it: no view lists a path that is gone until the next walk.
func (m *Model) ProjectStorage(ctx context.Context, name string, depth int) (ProjectStorage, error) {
	if depth == 0 {
		depth = DefaultDetailDepth
	}
	if depth < 1 || depth > inventory.MaxDepth {
		return ProjectStorage{}, fieldErrorf("depth", "%d: use 1 to %d", depth, inventory.MaxDepth)
	}
	p, err := m.Show(ctx, name)
	if err != nil {
		return ProjectStorage{}, err
	}
	if err := m.GrowthAndActivity(ctx, p.Trees); err != nil {
		return ProjectStorage{}, err
	}
	if err := m.Insight(ctx, p.Trees); err != nil {
		return ProjectStorage{}, err
	}
	out := ProjectStorage{Project: p.Name, Backend: p.Backend, Trees: make([]TreeStorage, 0, len(p.Trees))}
	for _, t := range p.Trees {
		ts := TreeStorage{TreeStatus: t, TopFiles: []inventory.File{}}
		k := store.TreeKey{Project: t.Project, Area: t.Area}
		snap, ok, err := m.Store.LatestSnapshot(ctx, k)
		if err != nil {
			return ProjectStorage{}, err
		}
		if ok {
			b, err := m.Store.LatestTree(ctx, k)
			if err != nil {
				return ProjectStorage{}, err
			}
			root, top, err := inventory.ParseStored(b)
			if err != nil {
				return ProjectStorage{}, err
			}
			if root, top, err = m.WithoutGone(ctx, t, snap.At, root, top); err != nil {
				return ProjectStorage{}, err
			}
			at := snap.At.UTC()
			ts.SnapshotAt, ts.Partial, ts.Tree = &at, snap.Partial, toDepth(root, depth)
			if top != nil {
				ts.TopFiles = top
			}
		}
		out.Trees = append(out.Trees, ts)
	}
	return out, nil
}

// BackendOnce is d with the backend at its top only, as the API answers.
func (d ProjectStorage) BackendOnce() ProjectStorage {
	if d.Trees == nil {
		return d
	}
	d.Trees = slices.Clone(d.Trees)
	for i := range d.Trees {
		d.Trees[i].Backend = core.Backend{}
	}
	return d
}

// toDepth is n with its descendants below depth levels cut off.
func toDepth(n *inventory.Node, depth int) *inventory.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Children = nil
	if depth > 0 {
		for _, ch := range n.Children {
			c.Children = append(c.Children, toDepth(ch, depth-1))
		}
	}
	return &c
}

// Warm reads what a long-lived server's first requests would otherwise
// wait for: the overview (assembled once, which on 1,000 projects takes
// about half a second that every early reader would spend waiting) and
// each project's kept answer (what a check before each run reads). A
// server calls it in the background once it listens; a project removed
// meanwhile is skipped, and ctx stops it between projects.
func (m *Model) Warm(ctx context.Context) (*Overview, error) {
	ov, err := m.Overview(ctx, OverviewOptions{})
	if err != nil {
		return nil, err
	}
	ps, err := m.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, err := m.Show(ctx, p.Name); err != nil && !errors.Is(err, core.ErrNotFound) {
			return nil, err
		}
	}
	return ov, nil
}
