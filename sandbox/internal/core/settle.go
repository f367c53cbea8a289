package core

import (
	"context"
	"errors"
	"io/fs"

	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/store"
)

// Settling interrupted deletions: a deletion journalled as pending by an
// operation that is gone is confirmed or marked failed from what is on
// disk. A sweep does it first (retention), doctor reports and fixes it, and
// a long-lived process does it as it starts (SettleInterrupted).

// SettleInterrupted settles the deletions journalled as pending by
// operations that are gone (a process killed mid-sweep, mid-purge or mid
// rm), as the next sweep would: confirmed done if the entry is gone, failed
// if it is still there. A long-lived process calls it as it starts, so that
// no deletion stays pending without its record settled until some sweep
// happens to run. It returns how many it settled.
func (m *Manager) SettleInterrupted(ctx context.Context) (int, error) {
	ctx, end := BeginOp(ctx)
	defer end()
	root, err := saferm.Open(m.Root)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	return m.ResolvePending(ctx, root)
}

// ResolvePending settles deletions journalled as pending by a process that
// is gone (a sweep, purge or files rm that was killed): gone from disk, they
// are confirmed done; still there, they are marked failed (the next plan
// decides about them afresh). It returns how many it settled.
func (m *Manager) ResolvePending(ctx context.Context, root *saferm.Dir) (int, error) {
	pending, err := m.Store.PendingEvictions(ctx)
	if err != nil {
		return 0, err
	}
	settled := 0
	for _, p := range pending {
		if !m.orphaned(ctx, p) {
			continue
		}
		if err := m.settle(ctx, root, p); err != nil {
			return settled, err
		}
		settled++
	}
	return settled, nil
}

// orphaned reports whether a pending deletion's writer is gone. A deletion
// whose operation is still under way (another sweep, a purge, a files rm,
// in this process or another) is in progress, not interrupted: its holder
// will confirm it. Records without a holder predate the field and count as
// orphaned.
func (m *Manager) orphaned(ctx context.Context, p store.PendingEviction) bool {
	h := p.Record.Holder
	return h == "" || !m.holderLive(ctx, h)
}

// settle journals the outcome of an orphaned pending deletion, read from
// disk as a removal looks: through no symlink and into no mount, so that a
// tenant's mount on the way (a FUSE server that never answers) is not
// waited on. Gone means done; anything else, an entry that cannot be
// looked at included, may still be there and is marked failed.
func (m *Manager) settle(ctx context.Context, root *saferm.Dir, p store.PendingEviction) error {
	rec := p.Record
	rec.Holder = HolderOf(ctx)
	switch _, err := root.Lstat(rec.Path); {
	case errors.Is(err, fs.ErrNotExist):
		rec.State, rec.Recovered = deletion.StateDone, true
	case err != nil:
		rec.State, rec.Error = deletion.StateFailed, "interrupted before the deletion finished: the entry could not be looked at ("+err.Error()+")"
	default:
		rec.State, rec.Error = deletion.StateFailed, "interrupted before the deletion finished: the entry is still there"
	}
	_, err := m.Store.SettlePending(ctx, p.Project, m.ActorOf(ctx), rec)
	return err
}
