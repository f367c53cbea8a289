package sweep

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/gitindex"
	"github.com/xfsq/xfsq/internal/nomount"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/journal"
)

// Record is one storage.evicted journal entry.
type Record = journal.Evicted

// Executor deletes a plan's entries inside the sandbox root.
type Executor struct {
	SweepID string
	// Root is the sandbox root: every tree is opened beneath it without
	// links, every entry re-checked and removed relative to its parent's
	// descriptor (saferm).
	Root   *saferm.Dir
	Policy Policy
	Now    func() time.Time
	// Leased reports whether a project holds a lease right now.
	Leased func(ctx context.Context, project string) (bool, error)
	// Journal appends a storage.evicted record; a deletion happens only
	// after its pending record is written.
	Journal deletion.Journal
	Budget  time.Duration // stop after this long; 0: none
	// Cutoff and Credit, when set (the fallback backend, where no kernel
	// counts), credit each deletion to its tree's ledger: Cutoff is the
	// saferm.Options.CountChangedBefore of an eviction's tree (when its
	// last walk began), Credit is told the removal's report (what it freed
	// that the walk had counted, and the inodes it freed that the walk had
	// not) and when the removal began. What the sweep reports and
	// journals freed is all it freed, cutoff or not.
	Cutoff func(ctx context.Context, ev Eviction) (time.Time, error)
	Credit func(ctx context.Context, ev Eviction, rep saferm.Report, started time.Time) error
	// Stops, when set, says whether a deletion's error ends the sweep:
	// its lock was lost (taken over, its lease lapsed), so no later entry
	// may be deleted by it. The result's Stopped is that error.
	Stops func(error) bool
}

// Done is one deletion made.
type Done struct {
	Path   string `json:"path"`
	Bytes  uint64 `json:"freed_bytes"` // freed: inodes whose last link went
	Reason string `json:"reason"`
	Policy string `json:"policy"`
	// Entries is the names removed; Left what of the entry stayed (its
	// reasons are also in the result's skipped list).
	Entries uint64        `json:"removed_entries"`
	Left    []saferm.Left `json:"left,omitempty"`
}

// Result is what a sweep did.
type Result struct {
	SweepID    string         `json:"sweep_id"`
	DryRun     bool           `json:"dry_run"`
	Evicted    []Done         `json:"evicted"`
	Skipped    []Skip         `json:"skipped"`
	BytesFreed uint64         `json:"freed_bytes"`
	PerPolicy  map[string]int `json:"per_policy"`
	Duration   time.Duration  `json:"-"`
	// DurationSeconds is Duration for JSON, which counts time in seconds (docs/design/README.md#output-conventions).
	DurationSeconds float64 `json:"duration_seconds"`
	// Stopped is why the sweep stopped before its plan's end, when a
	// deletion's error ended it (Executor.Stops): the entries after are
	// skipped with it.
	Stopped error `json:"-"`
}

// Run deletes what the plan says, one entry at a time, re-checking each
// just before: an entry that became fresh, leased, a symlink, a mount
// point, or reachable only through a link since planning is skipped with
// the reason. A cache cut stops as soon as the cap is met. What is
// reported freed is what the removal freed, not what the plan expected.
//
// Each entry goes through its phases: the gates that stop a sweep early
// (gate), the re-check on an open parent (reopen), what the removal must
// keep (keep), the journalled deletion, and what it did (record).
func (x *Executor) Run(ctx context.Context, plan Plan) Result {
	r := &run{
		start:     x.Now(),
		res:       Result{SweepID: x.SweepID, Evicted: []Done{}, Skipped: append([]Skip{}, plan.Skipped...), PerPolicy: map[string]int{}},
		cacheLeft: map[string]uint64{},
		trees:     map[string]*saferm.Dir{},
		repos:     map[string]*gitindex.Finder{},
	}
	for p, b := range plan.CacheBytes {
		r.cacheLeft[p] = b
	}
	defer func() {
		for _, d := range r.trees {
			d.Close()
		}
	}()
	for _, ev := range plan.Evict {
		if why := x.gate(ctx, r, plan, ev); why != "" {
			r.skip(ev, why)
			continue
		}
		x.evict(ctx, r, ev)
	}
	res := r.res
	sort.SliceStable(res.Skipped, func(i, j int) bool { return res.Skipped[i].Path < res.Skipped[j].Path })
	res.Duration = x.Now().Sub(r.start)
	res.DurationSeconds = res.Duration.Seconds()
	return res
}

// run is one sweep's state across its entries.
type run struct {
	start     time.Time
	res       Result
	cacheLeft map[string]uint64           // per project, what its cache holds still
	trees     map[string]*saferm.Dir      // the trees opened, by path
	repos     map[string]*gitindex.Finder // per workspace tree, its indexes kept for the sweep
}

func (r *run) skip(ev Eviction, reason string) {
	r.res.Skipped = append(r.res.Skipped, Skip{ev.Project, ev.Path, reason})
}

// gate says why the sweep stops before an entry ("" when it goes on):
// its time budget ran out, the entry's cache is already under its cap, or
// the sweep was cancelled.
func (x *Executor) gate(ctx context.Context, r *run, plan Plan, ev Eviction) string {
	switch {
	case x.Budget > 0 && x.Now().Sub(r.start) > x.Budget:
		return "the sweep's time budget ran out"
	case ev.Area == area.Cache && r.cacheLeft[ev.Project] <= plan.CacheCap:
		return "the cache is already under its cap"
	case ctx.Err() != nil:
		return "the sweep was cancelled"
	case r.res.Stopped != nil:
		return "the sweep stopped: " + r.res.Stopped.Error()
	}
	return ""
}

// evict deletes one entry, re-checked just before, through its journal
// record, and records what went.
func (x *Executor) evict(ctx context.Context, r *run, ev Eviction) {
	tree, parent, name, bytes, why := x.reopen(ctx, r, ev)
	if why != "" {
		r.skip(ev, why)
		return
	}
	keep, why := x.keep(ctx, ev, tree)
	if why != "" {
		parent.Close()
		r.skip(ev, why)
		return
	}
	rec := deletion.Record{SweepID: x.SweepID, Area: ev.Area, Bytes: bytes, Reason: ev.Reason, Policy: ev.Policy}
	started := time.Now()
	rec, rep, err := deletion.Delete(ctx, x.Journal, ev.Project, parent, name, rec, keep)
	parent.Close()
	x.record(ctx, r, ev, rec, rep, err, started)
}

// reopen opens the entry's parent and re-checks the entry there (for a
// workspace's, that git still does not track it); why says why it is
// skipped, and then nothing is left open.
func (x *Executor) reopen(ctx context.Context, r *run, ev Eviction) (tree, parent *saferm.Dir, name string, bytes uint64, why string) {
	tree, parent, name, why, err := x.parentOf(ev, r.trees)
	if err != nil || why != "" {
		if err != nil {
			why = "re-check failed: " + err.Error()
		}
		return nil, nil, "", 0, why
	}
	bytes, why, err = x.recheck(ctx, ev, parent, name)
	if err == nil && why == "" && ev.Area == area.Workspace {
		why, err = stillUntracked(ctx, tree, ev, r.repos)
	}
	if err != nil || why != "" {
		parent.Close()
		if err != nil {
			why = "re-check failed: " + err.Error()
		}
		return nil, nil, "", 0, why
	}
	return tree, parent, name, bytes, ""
}

// keep is what the removal of the entry must leave, and how it counts what
// it frees for the tree's ledger; why says why the entry is skipped.
func (x *Executor) keep(ctx context.Context, ev Eviction, tree *saferm.Dir) (keep saferm.Options, why string) {
	// What a run writes into the entry while it goes stays: busy_grace
	// holds below the entry too, not only for the entry as re-checked.
	keep = saferm.Options{KeepModifiedAfter: x.Now().Add(-x.Policy.BusyGrace), KeepRepositories: ev.Area == area.Workspace}
	if x.Cutoff == nil {
		return keep, ""
	}
	cutoff, err := x.Cutoff(ctx, ev)
	if err != nil {
		return keep, "could not read its tree's last walk for the ledger: " + err.Error()
	}
	// A ledger is credited only what its last link took, as files rm does.
	keep.ConfirmLastLink, keep.CountChangedBefore = true, cutoff
	// Deleted through its parent, so the directories above it are
	// asked of the tree: one moved in since the walk holds what
	// the walk counted elsewhere.
	if !tree.ParentsSettled(strings.TrimPrefix(ev.Path, area.TreePath(ev.Project, ev.Area)+"/"), keep) {
		keep.CountChangedBefore = saferm.CountNothing
	}
	return keep, ""
}

// record adds what the deletion of an entry did to the result: what it
// freed, what it left and why, and credits the tree's ledger.
func (x *Executor) record(ctx context.Context, r *run, ev Eviction, rec deletion.Record, rep saferm.Report, err error, started time.Time) {
	if err != nil && x.Stops != nil && x.Stops(err) && r.res.Stopped == nil {
		r.res.Stopped = err
	}
	var fenced *deletion.FencedError
	if errors.As(err, &fenced) {
		r.skip(ev, err.Error())
		return
	}
	if rec.State == deletion.StatePending {
		r.skip(ev, "could not journal the deletion, so it was not made: "+err.Error())
		return
	}
	for _, l := range rep.Left {
		r.res.Skipped = append(r.res.Skipped, Skip{ev.Project, l.Path, l.Reason})
	}
	if rep.Entries == 0 {
		if err != nil {
			r.skip(ev, "delete failed: "+err.Error())
		} else if !rep.Removed && len(rep.Left) == 0 {
			r.skip(ev, "gone since planning")
		}
		return
	}
	if err != nil {
		r.skip(ev, "delete stopped part-way: "+err.Error())
	}
	if x.Credit != nil {
		// What went, went, whatever else failed: credit it.
		if err := x.Credit(context.WithoutCancel(ctx), ev, rep, started); err != nil {
			r.skip(ev, "deleted, but its tree's ledger could not be credited (its figure over-counts until the next walk): "+err.Error())
		}
	}
	rep.Bytes, rep.Inodes = rep.AllBytes, rep.AllInodes
	r.res.Evicted = append(r.res.Evicted, Done{Path: rec.Path, Bytes: rep.Bytes, Reason: ev.Reason, Policy: ev.Policy, Entries: rep.Entries, Left: rep.Left})
	r.res.BytesFreed += rep.Bytes
	r.res.PerPolicy[ev.Policy]++
	if ev.Area == area.Cache {
		r.cacheLeft[ev.Project] -= min(r.cacheLeft[ev.Project], rep.Bytes)
	}
}

// parentOf opens the directory holding an eviction's entry: its tree
// beneath the root, then the entry's parent beneath the tree, neither
// through a link nor across a mount. why says why the entry cannot be
// reached so.
func (x *Executor) parentOf(ev Eviction, trees map[string]*saferm.Dir) (tree, parent *saferm.Dir, name, why string, err error) {
	treeRel := area.TreePath(ev.Project, ev.Area)
	inTree, ok := strings.CutPrefix(ev.Path, treeRel+"/")
	if treeRel == "" || !ok || inTree == "" || path.Clean(inTree) != inTree || strings.HasPrefix(inTree, "../") {
		return nil, nil, "", fmt.Sprintf("not inside the %s tree of %s (%s)", ev.Area, ev.Project, treeRel), nil
	}
	tree, ok = trees[treeRel]
	if !ok {
		if tree, err = x.Root.OpenDir(treeRel); err != nil {
			if errors.Is(err, saferm.ErrUnsafe) {
				return nil, nil, "", "its tree " + treeRel + " is not a real directory reached without links", nil
			}
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil, "", "gone since planning", nil
			}
			return nil, nil, "", "", err
		}
		trees[treeRel] = tree
	}
	parent, err = tree.OpenDir(path.Dir(inTree))
	switch {
	case errors.Is(err, saferm.ErrUnsafe):
		return nil, nil, "", "its path now leads through a symlink or another mount", nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, "", "gone since planning", nil
	case err != nil:
		return nil, nil, "", "", err
	}
	return tree, parent, path.Base(inTree), "", nil
}

// recheck looks at an entry again, relative to its parent's descriptor,
// just before deleting it; why is the reason to leave it, or "".
func (x *Executor) recheck(ctx context.Context, ev Eviction, parent *saferm.Dir, name string) (bytes uint64, why string, err error) {
	e, err := measure(parent, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, "gone since planning", nil
	case err != nil:
		return 0, "", err
	case e.Protected == protectedSymlink:
		return 0, "became a symlink since planning", nil
	case e.Protected == protectedOtherFS:
		return 0, "is a mount point or on another filesystem", nil
	}
	if e.Newest.After(x.Now().Add(-x.Policy.BusyGrace)) {
		return 0, "modified since planning (within busy_grace)", nil
	}
	if ev.Policy == PolicyCache && e.LastUse().After(x.Now().Add(-x.Policy.CacheMinAge)) {
		return 0, "used since planning (within cache_min_age)", nil
	}
	if leased, err := x.Leased(ctx, ev.Project); err != nil || leased {
		if err != nil {
			return 0, "", err
		}
		return 0, "the project was leased since planning", nil
	}
	return e.Bytes, "", nil
}

// maxIndexParses bounds how often one sweep parses a repository's index
// anew; a repository whose index changes more often is busy.
const maxIndexParses = 4

// stillUntracked reads again, just before a workspace entry is deleted,
// the index of every repository whose working tree holds it (a .git in
// the tree's root or any directory above the entry): git add changes
// nothing in the entry, so no other re-check sees a file tracked since
// planning. why is the reason to leave the entry, or "". A repository made
// inside the entry since is left whole by the deletion itself
// (saferm.Options.KeepRepositories), whatever its times.
func stillUntracked(ctx context.Context, tree *saferm.Dir, ev Eviction, repos map[string]*gitindex.Finder) (why string, err error) {
	treeRel := area.TreePath(ev.Project, ev.Area)
	inTree := strings.TrimPrefix(ev.Path, treeRel+"/")
	rf := repos[treeRel]
	if rf == nil {
		rf = gitindex.NewFinder(ctx, tree.Fd(), gitindex.Options{Keep: true})
		repos[treeRel] = rf
	}
	dirs := []string{"."}
	if d := path.Dir(inTree); d != "." {
		parts := strings.Split(d, "/")
		for i := range parts {
			dirs = append(dirs, strings.Join(parts[:i+1], "/"))
		}
	}
	for _, dir := range dirs {
		if n := rf.Parsed(dir); n >= maxIndexParses {
			return fmt.Sprintf("the git index of the repository at %s changed %d times during this sweep: left for the next one", path.Join(treeRel, dir), n), nil
		}
		d, err := tree.OpenDir(dir)
		if err != nil {
			return "", err
		}
		var st unix.Stat_t
		if err := nomount.Lstat(int(d.Fd()), ".git", &st); errors.Is(err, unix.ENOENT) {
			d.Close()
			continue
		}
		ix, why, err := rf.Read(d.Fd(), dir)
		d.Close()
		repo := path.Join(treeRel, dir)
		switch {
		case err != nil:
			return "", err
		case rf.ProtectAll() != "":
			return rf.ProtectAll(), nil
		case why != "":
			return fmt.Sprintf("the git repository at %s cannot be read now (%s): its working tree is protected", repo, why), nil
		case ix.Covers(within(dir, inTree)):
			return fmt.Sprintf("git-tracked since planning (in the repository at %s)", repo), nil
		}
	}
	return "", nil
}
