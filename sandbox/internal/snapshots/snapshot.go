package snapshots

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/sandbox/internal/core/treewalk"
	"github.com/xfsq/xfsq/store"
)

// Snapshot walks trees, stores each walk's totals and full tree, and
// returns them. A tree that fails is reported in its own entry.
func (m *Snapshots) Snapshot(ctx context.Context, o core.SnapshotOptions) ([]core.TreeSnapshot, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Area != "" {
		if err := core.ValidateArea(o.Area); err != nil {
			return nil, err
		}
	}
	var trees []store.Tree
	if len(o.Projects) == 0 {
		all, err := m.Store.Trees(ctx, "")
		if err != nil {
			return nil, err
		}
		trees = all
	}
	for _, name := range o.Projects {
		if o.Area != "" {
			// A project has no inbound tree, _root nothing else: say so
			// rather than walk nothing.
			if err := core.ValidateTree(name, o.Area); err != nil {
				return nil, err
			}
		}
		t, err := m.Store.Trees(ctx, name)
		if err != nil {
			return nil, err
		}
		if len(t) == 0 && name == core.RootOwner {
			return nil, core.NoInboundTree()
		}
		if len(t) == 0 {
			return nil, core.NotFound(name)
		}
		trees = append(trees, t...)
	}
	// Read before any walk: a setting that cannot be read fails the pass
	// at once, not after walking every tree.
	retention, err := m.Setting(ctx, "snapshot_retention")
	if err != nil {
		return nil, fmt.Errorf("read snapshot_retention: %w", err)
	}
	var walked []store.Tree
	for _, t := range trees {
		if o.Area == "" || t.Area == o.Area {
			walked = append(walked, t)
		}
	}
	var out []core.TreeSnapshot
	pass := func() { out = m.walkPass(ctx, walked, o, retention.Duration()) }
	if o.Scheduled {
		// On threads of its own: the caller's (a server's request
		// handlers) keep their priority.
		o.Walk.Background = true
		inventory.Background(pass) // best effort: a walk at normal priority is still a walk
	} else {
		pass()
	}
	if err := ctx.Err(); err != nil {
		return out, err // a pass cut short journals nothing: it is run again whole
	}
	if err := m.NoteWalked(ctx, walked, ""); err != nil && o.Scheduled {
		return out, err
	}
	if o.Scheduled {
		if err := m.journalPass(ctx, out); err != nil {
			return out, err
		}
	}
	return out, nil
}

// walkPass walks trees, a few at once (walkWorkers), and stores their
// walks in batches; it returns the entries of the trees it walked, in
// order: every tree up to where a cancelled pass stopped.
//
// A walk starts under one lock (start): the pass's context is checked,
// the tree claimed and the test hook called there, so that a cancelled
// pass starts no walk after the cancellation, even beside walks still
// running, and the walks of a batch all start after its BeginWalks and
// within its window. Each walk's errors are its own tree's entry.
func (m *Snapshots) walkPass(ctx context.Context, walked []store.Tree, o core.SnapshotOptions, retention time.Duration) []core.TreeSnapshot {
	out := make([]core.TreeSnapshot, len(walked))
	progress := o.Progress
	if progress != nil { // the walks report at once; the caller hears one at a time
		var mu sync.Mutex
		progress = func(p core.TreeProgress) {
			mu.Lock()
			defer mu.Unlock()
			o.Progress(p)
		}
	}
	var (
		start sync.Mutex // guards next and the batch
		next  int        // the first tree not claimed
		// storing is the flush of the batch before: every walk it holds
		// is stored before the pass returns, cancelled or not.
		storing sync.WaitGroup
	)
	for next < len(walked) && ctx.Err() == nil {
		b := &walkBatch{m: m, retention: retention, began: time.Now()}
		if m.xfs == nil {
			b.begin(ctx, walked[next:min(len(walked), next+treewalk.BatchMax)])
		}
		b.root, b.rootErr = m.openWalkRoot() // one copy of the mount for the batch's walks
		claim := func() (int, bool) {
			start.Lock()
			defer start.Unlock()
			// Between trees, never inside one: a cancelled pass (SIGTERM)
			// stores every walk it finished and starts none.
			if ctx.Err() != nil || next >= len(walked) || b.due() {
				return 0, false
			}
			i := next
			next++
			b.trees++
			if snapshotTreeStarts != nil {
				snapshotTreeStarts(ctx, walked[i])
			}
			return i, true
		}
		var wg sync.WaitGroup
		for range walkWorkers(len(walked) - next) {
			wg.Go(func() {
				if o.Scheduled {
					// A goroutine of its own is a thread of its own: lowered
					// as the pass's, and ended with the goroutine.
					_ = inventory.LowerThread()
				}
				for {
					i, ok := claim()
					if !ok {
						return
					}
					snap, rec := m.snapshotTree(walked[i], o.Walk, b, progress)
					start.Lock()
					out[i] = snap
					b.add(i, rec)
					start.Unlock()
				}
			})
		}
		wg.Wait()
		if b.root.Dir != nil {
			b.root.Close()
		}
		// Stored while the next batch walks (other trees, other entries
		// of out), one batch at a time.
		storing.Wait()
		storing.Go(func() { b.flush(ctx, out) })
	}
	storing.Wait()
	return out[:next]
}

// walkWorkers is how many trees a pass walks at once: a walk of a small
// tree waits on the kernel more than it computes (an open, a getdents,
// a few stats), and each walk has workers of its own for a large one.
// A few, so that a pass never takes over the machine.
func walkWorkers(trees int) int {
	return max(1, min(runtime.GOMAXPROCS(0), maxWalkWorkers, trees))
}

// maxWalkWorkers bounds walkWorkers.
var maxWalkWorkers = 4

// snapshotTreeStarts, when a test sets it, is called as each tree's walk
// starts, on the walking thread.
var snapshotTreeStarts func(ctx context.Context, t store.Tree)

// maxStoredNodes bounds the full tree kept of each snapshot: a default walk
// (depth 3, top 20: at most 8,421 nodes) is kept whole, a deeper one loses
// its lowest levels (about 20 bytes a node stored with short names, so
// ~200 KB; names of 255 bytes would make it ~2.7 MB).
var maxStoredNodes = 10_000

// walkBatch is the walks of a pass not stored yet.
type walkBatch struct {
	m         *Snapshots
	retention time.Duration
	began     time.Time
	walks     map[store.TreeKey]store.Walk // fallback: each tree's, as the batch began
	beginErr  error
	root      walkRoot // where its walks open their trees (openWalkRoot)
	rootErr   error    // the root could not be opened: each tree's error
	trees     int      // walks started in it, stored or not
	recs      []store.WalkRecord
	at        []int // each record's snapshot in the pass's results
}

func (b *walkBatch) due() bool {
	return b.trees >= treewalk.BatchMax || (b.trees > 0 && time.Since(b.began) > treewalk.BatchWindow)
}

// begin reads the writes in flight of the trees the batch may walk.
func (b *walkBatch) begin(ctx context.Context, trees []store.Tree) {
	keys := make([]store.TreeKey, len(trees))
	for i, t := range trees {
		keys[i] = store.TreeKey{Project: t.Project, Area: t.Area}
	}
	// As the walk's storing below: a pass stops between trees, not within one.
	b.walks, b.beginErr = b.m.Store.BeginWalks(context.WithoutCancel(ctx), keys, b.began)
	if b.walks == nil {
		b.walks = map[store.TreeKey]store.Walk{}
	}
}

// walk is the Walk of t's walk (ok false: the batch could not read it,
// and why).
func (b *walkBatch) walk(t store.Tree) (store.Walk, error) {
	if b.beginErr != nil {
		return store.Walk{}, b.beginErr
	}
	w, ok := b.walks[store.TreeKey{Project: t.Project, Area: t.Area}]
	if !ok {
		return store.Walk{}, fmt.Errorf("tree %s/%s: not among the batch's", t.Project, t.Area)
	}
	return w, nil
}

// add keeps the record of the walk of the pass's i-th tree (claimed, and
// so counted in b.trees, as its walk started).
// walkTree walks t in the batch's root (walkTreeIn).
func (b *walkBatch) walkTree(t store.Tree, opts inventory.Options) (*inventory.Result, error) {
	if b.rootErr != nil {
		return nil, b.rootErr
	}
	return b.m.walkTreeIn(b.root, t, opts)
}

func (b *walkBatch) add(i int, rec *store.WalkRecord) {
	if rec != nil {
		b.recs = append(b.recs, *rec)
		b.at = append(b.at, i)
	}
}

// flush stores the batch's walks, even if the pass was cancelled
// meanwhile (a pass stops between trees, not with walks thrown away), and
// empties it; a failure is each of its trees' error.
func (b *walkBatch) flush(ctx context.Context, out []core.TreeSnapshot) []core.TreeSnapshot {
	if err := b.m.Store.StoreWalks(context.WithoutCancel(ctx), b.recs, b.retention); err != nil {
		for _, i := range b.at {
			out[i].Error = "store the snapshot: " + err.Error()
		}
	}
	*b = walkBatch{m: b.m, retention: b.retention}
	return out
}

// snapshotTree walks t and returns its entry, and the record to store of
// it (nil when the walk failed).
func (m *Snapshots) snapshotTree(t store.Tree, opts inventory.Options, b *walkBatch, report func(core.TreeProgress)) (core.TreeSnapshot, *store.WalkRecord) {
	start := time.Now()
	s := core.TreeSnapshot{Project: t.Project, Area: t.Area, At: start.UTC()}
	if report != nil {
		opts.Progress = m.WalkProgress(t, report)
	}
	var walk store.Walk
	if m.xfs == nil { // the walk becomes the fallback's baseline below
		var err error
		if walk, err = b.walk(t); err != nil {
			s.Error = "read the writes in flight: " + err.Error()
			return s, nil
		}
		opts.Writing = inProgress(walk) // their reservations count them
	}
	res, err := b.walkTree(t, opts)
	s.DurationSeconds = time.Since(start).Seconds()
	if err != nil {
		s.Error = err.Error()
		return s, nil
	}
	s.Node, s.Partial, s.Errors, s.TopFiles = *res.Root, res.Partial, res.Errors, res.TopFiles
	snap := store.Snapshot{Project: t.Project, Area: t.Area, At: s.At, SizeBytes: s.SizeBytes, ApparentBytes: s.ApparentBytes,
		Files: s.Files, Dirs: s.Dirs, Mtime: s.Mtime, Partial: s.Partial, Errors: s.Errors, KernelBytes: -1}
	if m.xfs != nil {
		if q, err := m.xfs.Get(t.ProjectID); err == nil {
			s.KernelBytes, snap.KernelBytes = &q.Bytes, int64(q.Bytes)
		}
	}
	rec := &store.WalkRecord{Snapshot: snap, Tree: inventory.AppendStored(nil, inventory.Shallow(&s.Node, maxStoredNodes), s.TopFiles)}
	if m.xfs == nil && !s.Partial {
		// The walk is also the fallback's new baseline for admission.
		rec.Baseline = &store.WalkBaseline{Usage: quota.Usage{Bytes: s.SizeBytes, Inodes: s.Files + s.Dirs}, Walk: walk, Seen: walkSeen(res)}
	}
	return s, rec
}

// journalPass writes the one storage.snapshot event of a scheduled pass.
func (m *Snapshots) journalPass(ctx context.Context, snaps []core.TreeSnapshot) error {
	payload := journal.Snapshot{Trees: []journal.SnapshotTree{}}
	for _, s := range snaps {
		payload.Trees = append(payload.Trees, journal.SnapshotTree{Project: s.Project, Area: s.Area, SizeBytes: s.SizeBytes,
			Files: s.Files, Partial: s.Partial, Error: s.Error, DurationSeconds: new(s.DurationSeconds)})
		if s.Error != "" {
			payload.Failed++
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(m.Root, &st); err == nil {
		payload.FreeBytes = st.Bavail * uint64(st.Bsize)
	}
	return m.Store.InTx(ctx, func(tx *store.Tx) error {
		return tx.AppendEvent(ctx, "", m.ActorOf(ctx), payload)
	})
}

// Top walks one tree now, for `xfsq top`; opts.Depth must be 1 to MaxDepth.
func (m *Snapshots) Top(ctx context.Context, name, area string, opts inventory.Options) (*inventory.Result, error) {
	t, err := m.Tree(ctx, name, area)
	if err != nil {
		return nil, err
	}
	if opts.Depth < 1 || opts.Depth > inventory.MaxDepth {
		return nil, fieldErrorf("depth", "%d: use 1 to %d", opts.Depth, inventory.MaxDepth)
	}
	start := m.now().Truncate(time.Microsecond) // as the store keeps it
	key := store.TreeKey{Project: t.Project, Area: t.Area}
	keep := m.xfs == nil && !m.Store.ReadOnly()
	var walk store.Walk
	if keep {
		var err error
		if walk, err = m.Store.BeginWalk(ctx, key, start); err != nil {
			return nil, err
		}
		opts.Writing = inProgress(walk) // their reservations count them
	}
	res, err := m.walkTree(t, opts)
	if err != nil || !keep || res.Partial {
		return res, err
	}
	// On the fallback a complete walk is as good as the hourly pass's: it
	// becomes the tree's baseline, so report shows what top just saw.
	err = m.Store.SetBaseline(ctx, key,
		quota.Usage{Bytes: res.Root.SizeBytes, Inodes: res.Root.Files + res.Root.Dirs}, walk, walkSeen(res))
	return res, err
}
