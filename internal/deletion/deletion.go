// Package deletion is the one journalled deletion of xfsq: sweeps,
// project rm --purge, files rm and the removal of a write's temporary file
// all delete through Delete, which writes a pending storage.evicted record
// before anything goes, removes the entry with saferm, and settles the
// record with what really went (done, partial or failed). Record is that
// record's shape, read back by whoever reports on deletions.
//
// It must never remove anything unless the pending record was written,
// never settle a record as failed for what the tree's own activity (a
// tenant's rename, a link swapped in) or the caller's cancellation
// stopped, and never skip the settling record once anything may have
// gone. It resolves nothing itself (saferm does, from descriptors) and
// knows nothing of the store, policies or shells: the caller gives the
// journal as a function.
package deletion

import (
	"context"
	"errors"
	"io/fs"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/fault"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/journal"
)

// States of a storage.evicted record (see journal.StatePending).
const (
	StatePending = journal.StatePending
	StateDone    = journal.StateDone
	// StatePartial: the rest was left in place (mount points, entries
	// that changed meanwhile, the way to it changed), as the record's
	// left says.
	StatePartial = journal.StatePartial
	StateFailed  = journal.StateFailed
)

// LeftOf is a removal's left entries as its record states them (nil
// stays nil).
func LeftOf(left []saferm.Left) []journal.Left {
	if left == nil {
		return nil
	}
	out := make([]journal.Left, len(left))
	for i, l := range left {
		out[i] = journal.Left{Path: l.Path, Reason: l.Reason}
	}
	return out
}

// Record is one storage.evicted journal entry, as the journal types it.
type Record = journal.Evicted

// Journal appends one storage.evicted record of a project.
type Journal func(ctx context.Context, project string, r Record) error

// Delete deletes name beneath parent, journalled (sweeps, project rm
// --purge, files rm): the pending record, then the removal of name beneath
// parent by saferm, then the record of what really went — the path removed
// (parent's own path, not the one asked for), entries, inodes and bytes
// freed, what was left and why. Nothing is removed unless the pending
// record was written. It returns the confirmation record and the removal's
// report; the error is the pending record's, the removal's, or the
// confirmation's, in that order.
func Delete(ctx context.Context, journal Journal, project string, parent *saferm.Dir, name string, rec Record, o saferm.Options) (Record, saferm.Report, error) {
	rec.Path = joinRel(parent.Path(), name)
	rec.State = StatePending
	if err := journal(ctx, project, rec); err != nil {
		return rec, saferm.Report{Left: []saferm.Left{}}, err
	}
	// The crash tests kill here and after the removal; the points keep
	// the names they had when only sweeps deleted.
	fault.Point("sweep:after-pending")
	if err := fenced(ctx); err != nil {
		return rec, saferm.Report{Left: []saferm.Left{}}, err
	}
	rep, rmErr := parent.Remove(ctx, name, o)
	rmErr = collided(rmErr, &rep, rec.Path)
	fault.Point("sweep:after-delete")
	rec.State = StateDone
	// All that went, whatever o.CountChangedBefore leaves out of rep.Bytes
	// for a ledger's credit.
	rec.Bytes, rec.Entries, rec.Inodes, rec.Left = rep.AllBytes, rep.Entries, rep.AllInodes, LeftOf(rep.Left)
	switch {
	case rmErr != nil && ctx.Err() != nil && errors.Is(rmErr, ctx.Err()):
		// Stopped by its caller (a client that hung up, a shutdown): what
		// is left is left, no failure of the removal's. A failed record
		// pages an operator, and a tenant whose tree is large enough that
		// any caller's timeout runs out must not be able to.
		rec.State, rec.Error = StatePartial, rmErr.Error()
		rec.Left = LeftOf(append(slices.Clip(rep.Left), saferm.Left{Path: rec.Path, Reason: LeftStopped}))
	case rmErr != nil:
		rec.State, rec.Error = StateFailed, rmErr.Error()
	case len(rep.Left) > 0:
		rec.State = StatePartial
	}
	// The confirmation must be written even when ctx was cancelled
	// part-way: what went is on disk either way.
	err := journal(context.WithoutCancel(ctx), project, rec)
	if rmErr != nil {
		err = rmErr
	}
	return rec, rep, err
}

type fenceKey struct{}

// WithFence makes each deletion under ctx ask fence between its pending
// record and the removal, and stop there, removing nothing, if it says no.
// An operation that holds a lock others may take over when it looks gone
// (a sweep) sets it: a process paused after writing its pending record
// must not remove, once thawed, what the one that took over has settled.
func WithFence(ctx context.Context, fence func() error) context.Context {
	return context.WithValue(ctx, fenceKey{}, fence)
}

// FencedError is a deletion stopped by its fence after its pending record
// was written: nothing was removed, and the record stays pending for the
// operation that took over (or the next sweep) to settle from what is on
// disk.
type FencedError struct{ Err error }

func (e *FencedError) Error() string {
	return "stopped before the removal (its pending record is written; nothing was removed): " + e.Err.Error()
}

func (e *FencedError) Unwrap() error { return e.Err }

func fenced(ctx context.Context) error {
	f, ok := ctx.Value(fenceKey{}).(func() error)
	if !ok {
		return nil
	}
	if err := f(); err != nil {
		return &FencedError{Err: err}
	}
	return nil
}

// LeftStopped is why what a removal stopped by its caller did not reach
// is left.
const LeftStopped = "the removal was stopped (its request cancelled) before it finished: the rest is left in place"

// collided tells a removal that the tree's own activity stopped before it
// reached anything from one that failed: the way to the entry went
// meanwhile (a tenant renamed or removed a directory on it), or turned into
// a link, a non-directory or a mount, or kept changing. Nothing went; the
// entry is gone from its path (no error: what was asked holds) or is left,
// changed, as a partial record says. Neither is a failed deletion, which
// pages an operator (XfsqDeletionsFailed): a tenant must not be able to.
func collided(err error, rep *saferm.Report, p string) error {
	if err == nil || rep.Entries > 0 {
		return err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, saferm.ErrUnsafe), errors.Is(err, unix.EAGAIN):
		rep.Left = append(rep.Left, saferm.Left{Path: p, Reason: saferm.LeftChanged})
		return nil
	}
	return err
}

func joinRel(dir, name string) string {
	if dir == "." || dir == "" {
		return name
	}
	return dir + "/" + name
}
