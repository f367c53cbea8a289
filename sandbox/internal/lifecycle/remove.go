package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/fault"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/store"
)

// RemoveOptions say how a project is removed.
type RemoveOptions struct {
	// Purge deletes the project's trees too, each deletion journalled.
	Purge bool
	// Force removes the project although a run holds an unexpired lease on
	// it; the removal is journalled as forced, with the leases it ended.
	Force bool
	// DryRun changes nothing: it says what the removal would do, and with
	// Purge what it would delete and how much. It is refused as the real
	// removal would be (a held lease without Force), so that its answer
	// can be trusted.
	DryRun bool
}

// What a removal answers is the wire's (api/v1), which the server
// encodes as it is (DELETE …/projects/{id}).
type (
	RemoveResult = apiv1.RemoveResult
	Purged       = apiv1.Purged
	PurgePlan    = apiv1.PurgePlan
)

// LeaseHeldError refuses to remove a project a run still holds.
type LeaseHeldError struct {
	Project string
	Leases  []LeaseStatus
}

func (e *LeaseHeldError) Error() string {
	runs := make([]string, len(e.Leases))
	for i, l := range e.Leases {
		runs[i] = fmt.Sprintf("%s (until %s)", l.Run, l.ExpiresAt.UTC().Format(time.RFC3339))
	}
	lease := "a lease"
	if len(runs) > 1 {
		lease = "leases"
	}
	return fmt.Sprintf("project %q is held by %s of run %s", e.Project, lease, strings.Join(runs, ", "))
}

func (e *LeaseHeldError) Kind() errkind.Kind { return errkind.Conflict }
func (e *LeaseHeldError) Hint() errkind.Hint {
	return errkind.Fix("wait for the run to end, release its lease (%s), or remove with %s",
		errkind.Do(errkind.OpLeaseRelease, ""), errkind.Field("force"))
}

// Remove unregisters a project: limits cleared, rows deleted, its leases
// ended, IDs released once no file carries them. With Purge its trees are
// deleted too, each deletion journalled (storage.evicted) before and after.
// A project a run holds an unexpired lease on is refused (a
// LeaseHeldError, errkind.Conflict) unless Force; a removal already under
// way (state removing, e.g. interrupted) is finished whatever the leases,
// since it was decided when it began.
func (l *Lifecycle) Remove(ctx context.Context, name string, o RemoveOptions) (RemoveResult, error) {
	ctx, end := core.BeginOp(ctx)
	defer end()
	res := RemoveResult{Project: name, Purged: o.Purge, DryRun: o.DryRun, EndedLeases: []string{}, KeptIDs: []string{}, Left: []string{}, PurgedTrees: []Purged{}}
	if err := core.ValidateName(name); err != nil {
		return res, err
	}
	p, err := l.Store.Project(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return res, notFound(name)
	}
	if err != nil {
		return res, err
	}
	if p.State == store.StateAdding {
		err := l.removeAdding(ctx, p, o, &res)
		return res, err
	}
	if p.State == store.StateRemoving && l.HolderLive(ctx, p.Adder) {
		return res, errkind.New(errkind.Conflict, fmt.Errorf("project %q is being removed by another process (%s); wait for it", name, p.Adder))
	}
	if err := l.checkLeases(ctx, p, o, &res); err != nil {
		return res, err
	}
	trees, err := l.Store.Trees(ctx, name)
	if err != nil {
		return res, err
	}
	if o.DryRun {
		err := l.planRemoval(trees, o.Purge, &res)
		return res, err
	}
	if err := l.markRemoving(ctx, p, o); err != nil {
		return res, err
	}
	fault.Point("remove:marked")
	if err := l.clearTrees(ctx, trees, o.Purge, &res); err != nil {
		return res, err
	}
	err = l.unregister(ctx, name, trees, &res)
	return res, err
}

// removeAdding removes a project an add left half-way: refused while that
// add is under way, rolled back when it stopped.
func (l *Lifecycle) removeAdding(ctx context.Context, p store.Project, o RemoveOptions, res *RemoveResult) error {
	if l.HolderLive(ctx, p.Adder) {
		return errkind.New(errkind.Conflict, fmt.Errorf("project %q is being added by another process (%s); wait for it", p.Name, p.Adder))
	}
	if o.DryRun {
		return nil
	}
	var err error
	res.Left, err = l.RollbackAdd(ctx, p)
	return err
}

// checkLeases records the project's leases in res, and refuses a ready
// project that one holds unless o forces the removal.
func (l *Lifecycle) checkLeases(ctx context.Context, p store.Project, o RemoveOptions, res *RemoveResult) error {
	leases, err := l.ProjectLeases(ctx, p.Name)
	if err != nil {
		return err
	}
	var held []LeaseStatus
	for _, ls := range leases {
		res.EndedLeases = append(res.EndedLeases, ls.Run)
		if ls.Active {
			held = append(held, ls)
		}
	}
	if len(held) == 0 || p.State != store.StateReady {
		return nil
	}
	for _, h := range held {
		res.HeldLeases = append(res.HeldLeases, h.Run)
	}
	if !o.Force {
		return &LeaseHeldError{Project: p.Name, Leases: held}
	}
	res.Forced = o.Force
	return nil
}

// planRemoval is a dry run's answer: the trees that would be left, or with
// purge what purging each would free.
func (l *Lifecycle) planRemoval(trees []store.Tree, purge bool, res *RemoveResult) error {
	for _, t := range trees {
		present, mounted := l.onDisk(t)
		if !present {
			continue
		}
		if !purge || mounted { // a purge leaves a mount point in place
			res.Left = append(res.Left, t.Path)
			continue
		}
		q, err := l.Backend.Get(t.ProjectID)
		if err != nil {
			return err
		}
		res.WouldPurge = append(res.WouldPurge, PurgePlan{Path: t.Path, Area: t.Area, Bytes: q.Bytes, Inodes: q.Inodes})
	}
	return nil
}

// onDisk tells whether t's directory is there, and whether another
// filesystem is mounted on it or on the way to it. It looks as a removal
// does, never through a mount: a tenant's may never answer. What cannot be
// looked at counts as there.
func (l *Lifecycle) onDisk(t store.Tree) (present, mounted bool) {
	root, err := saferm.Open(l.Root)
	if err != nil {
		return true, false
	}
	defer root.Close()
	look, err := core.LookAtTree(root, t.Path)
	return err != nil || !look.Missing, look.Mounted
}

// markRemoving marks the project removing, holding the leases again under
// their lock in the same transaction: a lease taken since checkLeases
// either refuses the removal here or is refused itself (AcquireLease).
func (l *Lifecycle) markRemoving(ctx context.Context, p store.Project, o RemoveOptions) error {
	return l.Store.InTx(ctx, func(tx *store.Tx) error {
		if p.State == store.StateReady && !o.Force {
			now, err := tx.HeldLeases(ctx, p.Name, l.Now())
			if err != nil {
				return err
			}
			if len(now) > 0 {
				held := make([]LeaseStatus, len(now))
				for i, ls := range now {
					held[i] = leaseStatus(ls, true)
				}
				return &LeaseHeldError{Project: p.Name, Leases: held}
			}
		}
		if p.State == store.StateRemoving {
			// A removal another process left half-way: taken over, and
			// journalled, only if its holder is still gone under the
			// name's lock (two processes may each have judged it so).
			err := tx.TakeOverRemove(ctx, p, l.ClaimFor(ctx))
			if errors.Is(err, store.ErrRemoveChanged) {
				err = errkind.WithFix(errkind.Conflict, fmt.Errorf("%w; nothing removed", err), errkind.Fix("see %s", errkind.Do(errkind.OpProjectShow, p.Name)))
			}
			return err
		}
		return tx.SetProjectState(ctx, p.Name, store.StateRemoving, core.HolderOf(ctx))
	})
}

// clearTrees clears each tree's limits and, with purge, deletes it
// (journalled); without, records the trees left on disk.
func (l *Lifecycle) clearTrees(ctx context.Context, trees []store.Tree, purge bool, res *RemoveResult) error {
	for _, t := range trees {
		if err := l.Backend.Clear(t.ProjectID); err != nil {
			return err
		}
		if purge {
			p, err := l.purgeTree(ctx, t)
			if p.Path != "" {
				res.PurgedTrees = append(res.PurgedTrees, p)
			}
			if err != nil {
				return err
			}
		} else if present, _ := l.onDisk(t); present {
			res.Left = append(res.Left, t.Path)
		}
		fault.Point("remove:" + t.Area + ":cleared")
	}
	return nil
}

// RemoveFaultPoints are where tests kill `project remove` to show that the
// next removal of the project, from another process, takes the dead one's
// over and finishes it.
var RemoveFaultPoints = func() []string {
	points := []string{"remove:marked"}
	for _, a := range area.OfProject {
		points = append(points, "remove:"+a+":cleared")
	}
	return points
}()

// unregister releases the trees' IDs (or keeps those files still carry),
// deletes the project's row and journals project.removed, in one
// transaction.
func (l *Lifecycle) unregister(ctx context.Context, name string, trees []store.Tree, res *RemoveResult) error {
	used, err := l.IDsStillUsed(trees)
	if err != nil {
		return err
	}
	return l.Store.InTx(ctx, func(tx *store.Tx) error {
		for _, t := range trees {
			if used[t.ProjectID] {
				res.KeptIDs = append(res.KeptIDs, fmt.Sprintf("%d (%s)", t.ProjectID, t.Path))
			}
			if err := core.ReleaseOrKeep(ctx, tx, t, used[t.ProjectID], "removed:"+name+"/"+t.Area); err != nil {
				return err
			}
		}
		if err := tx.DeleteProject(ctx, name); err != nil {
			return err
		}
		return tx.AppendEvent(ctx, name, l.ActorOf(ctx), removedPayload(*res))
	})
}

// purgeTree deletes one tree inside the root, journalled; mount points in
// it are left in place and reported.
func (l *Lifecycle) purgeTree(ctx context.Context, t store.Tree) (Purged, error) {
	q, _ := l.Backend.Get(t.ProjectID)
	dir, err := saferm.Open(l.Root)
	if err != nil {
		return Purged{}, err
	}
	defer dir.Close()
	parent, err := dir.OpenDir(path.Dir(t.Path))
	if errors.Is(err, os.ErrNotExist) {
		return Purged{}, nil // nothing on disk to purge
	}
	if err != nil {
		return Purged{}, fmt.Errorf("purge %s: %w", t.Path, err)
	}
	defer parent.Close()
	rec := deletion.Record{Area: t.Area, Bytes: q.Bytes, Reason: "purge", Policy: journal.PolicyPurge}
	rec, rep, err := l.RemoveJournalled(ctx, t.Project, parent, path.Base(t.Path), rec, saferm.Options{})
	p := Purged{Path: rec.Path, State: rec.State, RemovedEntries: rep.Entries, FreedBytes: rep.Bytes, FreedInodes: rep.Inodes,
		Left: each(rep.Left, func(x saferm.Left) apiv1.Left { return apiv1.Left(x) })}
	if err != nil {
		return p, fmt.Errorf("purge %s (removed %d entries before it stopped): %w", t.Path, rep.Entries, err)
	}
	return p, nil
}
