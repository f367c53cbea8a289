package core

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store"
)

// TreeSnapshot is one tree's walk as `xfsq snapshot` prints it.
type TreeSnapshot struct {
	Project string `json:"project"`
	Area    string `json:"area"`
	inventory.Node
	Partial     bool             `json:"partial"`
	Errors      uint64           `json:"unreadable_entries"`
	TopFiles    []inventory.File `json:"top_files"`
	At          time.Time        `json:"walked_at"`
	KernelBytes *uint64          `json:"kernel_bytes,omitempty"` // XFS: the kernel's count right after the walk
	// DurationSeconds is how long the walk took (journalled with a
	// scheduled pass: xfsq_walk_duration_seconds comes from it).
	DurationSeconds float64 `json:"duration_seconds"`
	Error           string  `json:"error,omitempty"` // the walk of this tree failed; the others went on
}

// SnapshotOptions choose the trees and bound the walks.
type SnapshotOptions struct {
	Projects []string // none: every tree (the root's inbound tree too); RootOwner names that one
	Area     string   // "": every area
	Walk     inventory.Options
	// Scheduled marks a pass of the ticker (or `snapshot --all`): it runs at
	// background priority and journals one storage.snapshot event.
	Scheduled bool
	// Progress, if set, is called with each walk's running totals and the
	// tree it walks (it replaces Walk.Progress, which cannot name the tree).
	Progress func(TreeProgress)
}

// Validate refuses options no walk can honour, naming the field, so that
// every shell gets the same rule. Zero is the walker's default.
func (o SnapshotOptions) Validate() error {
	switch {
	case o.Walk.Depth < 0 || o.Walk.Depth > inventory.MaxDepth:
		return fieldErrorf("depth", "%d: use 1 to %d", o.Walk.Depth, inventory.MaxDepth)
	case o.Walk.TopK < 0:
		return fieldErrorf("top", "%d: use a positive number", o.Walk.TopK)
	}
	return nil
}

// Snapshot walks trees, stores each walk's totals and full tree, and
// returns them. A tree that fails is reported in its own entry.
func (m *Manager) Snapshot(ctx context.Context, o SnapshotOptions) ([]TreeSnapshot, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Area != "" {
		if err := ValidateArea(o.Area); err != nil {
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
			if err := ValidateTree(name, o.Area); err != nil {
				return nil, err
			}
		}
		t, err := m.Store.Trees(ctx, name)
		if err != nil {
			return nil, err
		}
		if len(t) == 0 && name == RootOwner {
			return nil, errNoInboundTree()
		}
		if len(t) == 0 {
			return nil, notFound(name)
		}
		trees = append(trees, t...)
	}
	// Read before any walk: a setting that cannot be read fails the pass
	// at once, not after walking every tree.
	retention, err := m.setting(ctx, "snapshot_retention")
	if err != nil {
		return nil, fmt.Errorf("read snapshot_retention: %w", err)
	}
	out := make([]TreeSnapshot, 0, len(trees))
	pass := func() {
		for _, t := range trees {
			if o.Area != "" && t.Area != o.Area {
				continue
			}
			// Between trees, never inside one: a cancelled pass (SIGTERM)
			// stores every walk it finished and starts none.
			if ctx.Err() != nil {
				return
			}
			if snapshotTreeStarts != nil {
				snapshotTreeStarts(ctx, t)
			}
			out = append(out, m.snapshotTree(ctx, t, o.Walk, retention.Duration(), o.Progress))
		}
	}
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
	if err := m.noteWalked(ctx, trees, o.Area); err != nil && o.Scheduled {
		return out, err
	}
	if o.Scheduled {
		if err := m.journalPass(ctx, out); err != nil {
			return out, err
		}
	}
	return out, nil
}

// snapshotTreeStarts, when a test sets it, is called as each tree's walk
// starts, on the walking thread.
var snapshotTreeStarts func(ctx context.Context, t store.Tree)

// maxStoredNodes bounds the full tree kept of each snapshot: a default walk
// (depth 3, top 20: at most 8,421 nodes) is kept whole, a deeper one loses
// its lowest levels (about 20 bytes a node stored with short names, so
// ~200 KB; names of 255 bytes would make it ~2.7 MB).
var maxStoredNodes = 10_000

func (m *Manager) snapshotTree(ctx context.Context, t store.Tree, opts inventory.Options, retention time.Duration, report func(TreeProgress)) TreeSnapshot {
	start := time.Now()
	s := TreeSnapshot{Project: t.Project, Area: t.Area, At: start.UTC()}
	if report != nil {
		opts.Progress = m.treeProgress(t, report)
	}
	var walk store.Walk
	if m.xfs == nil { // the walk becomes the fallback's baseline below
		var err error
		// As the walk's storing below: a pass stops between trees, not within one.
		if walk, err = m.Store.BeginWalk(context.WithoutCancel(ctx), store.TreeKey{Project: t.Project, Area: t.Area}, s.At); err != nil {
			s.Error = "read the writes in flight: " + err.Error()
			return s
		}
		opts.Writing = inProgress(walk) // their reservations count them
	}
	res, err := m.walkTree(t, opts)
	s.DurationSeconds = time.Since(start).Seconds()
	if err != nil {
		s.Error = err.Error()
		return s
	}
	s.Node, s.Partial, s.Errors, s.TopFiles = *res.Root, res.Partial, res.Errors, res.TopFiles
	snap := store.Snapshot{Project: t.Project, Area: t.Area, At: s.At, SizeBytes: s.SizeBytes, ApparentBytes: s.ApparentBytes,
		Files: s.Files, Dirs: s.Dirs, Mtime: s.Mtime, Partial: s.Partial, Errors: s.Errors, KernelBytes: -1}
	if m.xfs != nil {
		if q, err := m.xfs.Get(t.ProjectID); err == nil {
			s.KernelBytes, snap.KernelBytes = &q.Bytes, int64(q.Bytes)
		}
	}
	tree := inventory.AppendStored(nil, inventory.Shallow(&s.Node, maxStoredNodes), s.TopFiles)
	// A walk finished is stored even if the pass was cancelled meanwhile:
	// a pass stops between trees, not with a walk thrown away.
	ctx = context.WithoutCancel(ctx)
	err = m.Store.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.AddSnapshot(ctx, snap, tree, retention); err != nil {
			return err
		}
		if m.xfs != nil || s.Partial {
			return nil
		}
		// The walk is also the fallback's new baseline for admission.
		return tx.SetBaseline(ctx, store.TreeKey{Project: t.Project, Area: t.Area},
			quota.Usage{Bytes: s.SizeBytes, Inodes: s.Files + s.Dirs}, walk, walkSeen(res))
	})
	if err != nil {
		s.Error = "store the snapshot: " + err.Error()
	}
	return s
}

// journalPass writes the one storage.snapshot event of a scheduled pass.
func (m *Manager) journalPass(ctx context.Context, snaps []TreeSnapshot) error {
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
		return tx.AppendEvent(ctx, "", m.actor(ctx), payload)
	})
}

// Top walks one tree now, for `xfsq top`; opts.Depth must be 1 to MaxDepth.
func (m *Manager) Top(ctx context.Context, name, area string, opts inventory.Options) (*inventory.Result, error) {
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

// growthAndActivity fills the snapshot-derived fields of report rows from
// one read of every tree's snapshots (store.SnapshotSummaries): a read per
// row was three statements a tree.
func (m *Manager) growthAndActivity(ctx context.Context, rows []TreeStatus) error {
	if len(rows) == 0 {
		return nil
	}
	project := rows[0].Project // one project's rows (a detail page) read only its trees
	for _, r := range rows {
		if r.Project != project {
			project = ""
			break
		}
	}
	sums, err := m.Store.SnapshotSummaries(ctx, project, 24*time.Hour, 7*24*time.Hour)
	if err != nil {
		return err
	}
	for i := range rows {
		r := &rows[i]
		sum, ok := sums[store.TreeKey{Project: r.Project, Area: r.Area}]
		if !ok {
			continue
		}
		snap := sum.Latest
		// Growth is between complete walks; a partial one saw part of the tree.
		if sum.HaveComplete {
			r.Growth24h, r.Growth7d = sum.Growth[0], sum.Growth[1]
		}
		// Every walk's newest mtime was seen: a partial walk may have missed
		// newer ones, so the older complete walk's counts too.
		activity := snap.Mtime
		if sum.HaveComplete && sum.Complete.Mtime.After(activity) {
			activity = sum.Complete.Mtime
		}
		if !activity.IsZero() {
			r.LastActivityAt = &activity
		}
		if walkDisagrees(snap) {
			walk := snap.SizeBytes
			r.WalkBytes = &walk
			r.Escape = fmt.Sprintf("the walk at %s found %d bytes under the tree, the kernel counts %d for its project ID: "+
				"files may have left the quota (the doctor's repair re-tags them)", snap.At.Format(time.RFC3339), walk, snap.KernelBytes)
		}
	}
	return nil
}

// walkDisagrees reports whether a snapshot's walk and the kernel's count for
// the tree's project ID, read right after it, differ by more than 1 % of the
// larger: the sign of a quota escape that report shows and doctor checks.
// A partial walk saw only part of the tree, and without a kernel count
// (the fallback) there is nothing to compare.
func walkDisagrees(s store.Snapshot) bool {
	if s.KernelBytes < 0 || s.Partial {
		return false
	}
	walk, kernel := s.SizeBytes, uint64(s.KernelBytes)
	return (max(walk, kernel)-min(walk, kernel))*100 > max(walk, kernel)
}
