package sweep

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sort"
	"time"

	"github.com/xfsq/xfsq/internal/fault"
)

// Record is one storage.evicted journal entry.
type Record struct {
	SweepID string `json:"sweep_id,omitempty"` // none outside sweeps (purge, files rm)
	Area    string `json:"area"`
	Path    string `json:"path"`
	Bytes   uint64 `json:"bytes"`
	Reason  string `json:"reason"`
	Policy  string `json:"policy"`
	State   string `json:"state"` // pending, done, failed
	Error   string `json:"error,omitempty"`
	// Holder is the operation making the deletion (pid.start@host/op-N,
	// as project.HolderOf names it): a pending record whose holder is
	// still under way is a deletion in progress, not an interrupted one.
	Holder string `json:"holder,omitempty"`
	// DeletionID tells apart deletions outside sweeps, which share no sweep
	// id: two files rm of one path must not settle each other's record.
	DeletionID string `json:"deletion_id,omitempty"`
}

// Executor deletes a plan's entries inside the sandbox root.
type Executor struct {
	SweepID string
	Root    *os.Root // the sandbox root: every deletion goes through it
	RootDir string
	RootDev uint64
	Policy  Policy
	Now     func() time.Time
	// Leased reports whether a project holds a lease right now.
	Leased func(ctx context.Context, project string) (bool, error)
	// Journal appends a storage.evicted record; a deletion happens only
	// after its pending record is written.
	Journal func(ctx context.Context, project string, r Record) error
	Budget  time.Duration // stop after this long; 0: none
}

// Done is one deletion made.
type Done struct {
	Path   string `json:"path"`
	Bytes  uint64 `json:"bytes"`
	Reason string `json:"reason"`
	Policy string `json:"policy"`
}

// Result is what a sweep did.
type Result struct {
	SweepID    string         `json:"sweep_id"`
	DryRun     bool           `json:"dry_run"`
	Evicted    []Done         `json:"evicted"`
	Skipped    []Skip         `json:"skipped"`
	BytesFreed uint64         `json:"bytes_freed"`
	PerPolicy  map[string]int `json:"per_policy"`
	Duration   time.Duration  `json:"duration_ns"`
}

// Run deletes what the plan says, one entry at a time, re-checking each
// just before: an entry that became fresh, leased, a symlink, another
// filesystem or another kind of file since planning is skipped with the
// reason. A cache cut stops as soon as the cap is met.
func (x *Executor) Run(ctx context.Context, plan Plan) Result {
	start := x.Now()
	res := Result{SweepID: x.SweepID, Evicted: []Done{}, Skipped: append([]Skip{}, plan.Skipped...), PerPolicy: map[string]int{}}
	cacheLeft := map[string]uint64{}
	for p, b := range plan.CacheBytes {
		cacheLeft[p] = b
	}
	for _, ev := range plan.Evict {
		skip := func(reason string) { res.Skipped = append(res.Skipped, Skip{ev.Project, ev.Path, reason}) }
		if x.Budget > 0 && x.Now().Sub(start) > x.Budget {
			skip("the sweep's time budget ran out")
			continue
		}
		if ev.Area == AreaCache && cacheLeft[ev.Project] <= plan.CacheCap {
			skip("the cache is already under its cap")
			continue
		}
		bytes, why, err := x.recheck(ctx, ev)
		if err != nil {
			skip("re-check failed: " + err.Error())
			continue
		}
		if why != "" {
			skip(why)
			continue
		}
		rec := Record{SweepID: x.SweepID, Area: ev.Area, Path: ev.Path, Bytes: bytes, Reason: ev.Reason, Policy: ev.Policy, State: "pending"}
		if err := x.Journal(ctx, ev.Project, rec); err != nil {
			skip("could not journal the deletion, so it was not made: " + err.Error())
			continue
		}
		fault.Point("sweep:after-pending")
		rmErr := x.Root.RemoveAll(ev.Path)
		fault.Point("sweep:after-delete")
		rec.State = "done"
		if rmErr != nil {
			rec.State, rec.Error = "failed", rmErr.Error()
		}
		// The confirmation may fail to write; the pending record stays and is
		// resolved by the next sweep.
		x.Journal(context.WithoutCancel(ctx), ev.Project, rec)
		if rmErr != nil {
			skip("delete failed: " + rmErr.Error())
			continue
		}
		res.Evicted = append(res.Evicted, Done{ev.Path, bytes, ev.Reason, ev.Policy})
		res.BytesFreed += bytes
		res.PerPolicy[ev.Policy]++
		if ev.Area == AreaCache {
			cacheLeft[ev.Project] -= min(cacheLeft[ev.Project], bytes)
		}
	}
	sort.SliceStable(res.Skipped, func(i, j int) bool { return res.Skipped[i].Path < res.Skipped[j].Path })
	res.Duration = x.Now().Sub(start)
	return res
}

// recheck looks at an entry again just before deleting it; why is the
// reason to leave it, or "".
func (x *Executor) recheck(ctx context.Context, ev Eviction) (bytes uint64, why string, err error) {
	fi, err := x.Root.Lstat(ev.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, "gone since planning", nil
	case err != nil:
		return 0, "", err
	}
	e, err := measure(x.RootDir, x.RootDev, ev.Path, fi)
	switch {
	case err != nil:
		return 0, "", err
	case e.Protected == protectedSymlink:
		return 0, "became a symlink since planning", nil
	case e.Protected == protectedOtherFS:
		return 0, "is on another filesystem", nil
	}
	if e.Newest.After(x.Now().Add(-x.Policy.BusyGrace)) {
		return 0, "modified since planning (within busy_grace)", nil
	}
	if leased, err := x.Leased(ctx, ev.Project); err != nil || leased {
		if err != nil {
			return 0, "", err
		}
		return 0, "the project was leased since planning", nil
	}
	return e.Bytes, "", nil
}
