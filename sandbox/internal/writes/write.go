package writes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/quota/fallback"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/sandbox/internal/core/diskfull"
	"github.com/xfsq/xfsq/store"
)

// Write is the accounting of one write into a tree made through xfsq (the
// file layer's put, the HTTP upload): reserve before allocating, grow a
// streaming body's reservation, renew it while the body makes progress,
// commit the change to the ledger, undo a commit whose rename failed, and
// release what a write that did not finish held. It is the one owner of
// that protocol: on the fallback backend each step is a transaction of the
// store, so two processes can never together pass a limit; on XFS the
// kernel is the reservation and only what the kernel cannot check (the
// per-write limit) and what it would refuse half-way are checked here.
type Write struct {
	m      *Writes
	tree   store.Tree
	label  string // the tree as errors name it
	limits WriteLimits
	inodes uint64 // new inodes: the file if new, plus missing directories
	names  uint64 // fallback: what its names may grow their directories by, reserved and settled at Placed
	temp   string // the temporary file's path relative to the root, for a reclaim

	reservation int64     // fallback: the store's reservation, 0 when none
	reservedAt  time.Time // when the reservation was made: a walk since may have seen the body
	dirBytes    uint64    // of the reservation, what the missing directories take
	held        uint64
	renewed     time.Time
	committed   int64     // bytes committed to the ledger, for Undo
	committing  time.Time // when the commit began: a credit of its estimate is as of then
	ino         uint64    // the inode the commit's row counts whole, for Undo
	inLedger    bool      // the commit reached the ledger
}

// WriteLimits are the file layer's own limits on a write (files.WriteLimits).
type WriteLimits = files.WriteLimits

// StartWrite begins the accounting of a write of inodes new inodes into
// t; label names the tree in errors, temp is the write's temporary file
// (relative to the root) that a reclaim of its reservation may delete.
//
// names is what the write's new names may grow their directories by (on
// XFS the kernel counts it): a directory on ext4 or XFS grows by whole
// blocks as names are added, and the fallback's walk counts them, so a
// write that did not pay for its names let zero-byte uploads fill a tree
// without limit. It is reserved with the write (fallback.Request.Names
// says how it is admitted), counted in the commit as it is, and settled at
// Placed at the growth the caller measured around its link.
func (m *Writes) StartWrite(t store.Tree, label string, limits WriteLimits, inodes, names uint64, temp string) *Write {
	if m.IsXFS() {
		names = 0
	}
	return &Write{m: m, tree: t, label: label, limits: limits, inodes: inodes, names: names, temp: temp}
}

func (w *Write) key() store.TreeKey { return store.TreeKey{Project: w.tree.Project, Area: w.tree.Area} }

func (w *Write) admit(fileBytes, bytes, inodes, names uint64) store.AdmitFunc {
	return func(a store.AdmitState) error {
		return fallback.Admit(fallback.State{Tree: w.label, Limits: a.Limits, Used: a.Used,
			RootUsed: a.RootUsed, RootBudget: w.limits.RootBudget, MaxFileBytes: w.limits.MaxFileBytes,
			BytesGraceEnds: graceEnds(a.BytesSoftSince, w.limits.SoftGrace), InodesGraceEnds: graceEnds(a.InodesSoftSince, w.limits.SoftGrace),
			Now: w.m.Now()},
			fallback.Request{FileBytes: fileBytes, Bytes: bytes, Inodes: inodes, Names: names})
	}
}

// graceEnds is when a grace timer started at since runs out; zero when
// none is running.
func graceEnds(since time.Time, grace time.Duration) time.Time {
	if since.IsZero() {
		return time.Time{}
	}
	return since.Add(grace)
}

// Reserve admits the write: a file of fileBytes taking bytes more than
// before on disk (its missing directories included), and the write's
// inodes. Held is then what the file's content may take beyond the old
// file; dirBytes of bytes are the directories'.
func (w *Write) Reserve(ctx context.Context, fileBytes, bytes, dirBytes uint64) error {
	if w.m.IsXFS() {
		q, err := w.m.Backend.Get(w.tree.ProjectID)
		if err != nil {
			return err
		}
		w.held = ^uint64(0) >> 1 // the kernel is the reservation
		// What the kernel would refuse, refused before the body is read:
		// the hard limits, and a soft one past the kernel's grace timer.
		return fallback.Admit(fallback.State{Tree: w.label, Limits: q.Limits, Used: q.Usage, MaxFileBytes: w.limits.MaxFileBytes,
			BytesGraceEnds: q.BytesGraceEnds.Time(), InodesGraceEnds: q.InodesGraceEnds.Time(), Now: w.m.Now()},
			fallback.Request{FileBytes: fileBytes, Bytes: bytes, Inodes: w.inodes})
	}
	if err := w.m.RefreshBaselineIfStale(ctx, w.tree); err != nil {
		return err
	}
	id, reclaimed, err := w.m.Store.Reserve(ctx, w.key(), bytes+w.names, w.inodes, core.HolderOf(ctx),
		w.temp, w.limits.TTL, core.HolderGone, w.admit(fileBytes, bytes, w.inodes, w.names))
	reservedAt := time.Now() // after: a walk begun before it may not have seen the reservation
	w.m.RemoveTemps(ctx, reclaimed)
	if err != nil {
		return err
	}
	w.reservation, w.held, w.dirBytes, w.renewed, w.reservedAt = id, bytes-dirBytes, dirBytes, reservedAt, reservedAt
	return nil
}

// NamedTemp records the inode of the write's temporary file where it has a
// name in the tree (no O_TMPFILE): a walk then leaves out that file, which
// the reservation counts, and nothing else a tenant puts at the name.
func (w *Write) NamedTemp(ctx context.Context, ino uint64) error {
	if w.reservation == 0 {
		return nil
	}
	return reservationErr(w.m.Store.TempInode(ctx, w.reservation, ino))
}

// Held is what the file's content may take beyond the old file's blocks.
func (w *Write) Held() uint64 { return w.held }

// CanGrow reports whether Grow may ever give more: not on XFS, where the
// kernel refuses what is over the limit as it is written.
func (w *Write) CanGrow() bool { return !w.m.IsXFS() }

// Grow asks for n more bytes. A *quota.LimitError says how much is left.
func (w *Write) Grow(ctx context.Context, n uint64) error {
	if !w.CanGrow() {
		return errors.New("the kernel holds this write's room: it cannot grow")
	}
	// The reservation holds the room of the write's names too, which
	// the content does not compete with (fallback.Request.Names).
	admit := w.admit(0, n, 0, 0)
	withoutNames := func(a store.AdmitState) error {
		a.Used.Bytes -= min(a.Used.Bytes, w.names)
		a.RootUsed -= min(a.RootUsed, w.names)
		return admit(a)
	}
	reclaimed, err := w.m.Store.Grow(ctx, w.key(), w.reservation, n, w.limits.TTL, core.HolderGone, withoutNames)
	w.m.RemoveTemps(ctx, reclaimed)
	if err == nil {
		w.held += n
		w.renewed = time.Now()
	}
	return reservationErr(err)
}

// reservationErr classifies a reservation another writer reclaimed once it
// expired (a body that stalled for the whole reservation_ttl): the write
// collided with the others, which a new attempt need not (409, exit 1),
// rather than failing as xfsq's own error.
//
// So is a tree removed while the write was in progress (its project
// removed, --force): the write met another operation, not a fault of xfsq.
func reservationErr(err error) error {
	switch {
	case errors.Is(err, store.ErrReservationGone):
		return errkind.New(errkind.Conflict, err)
	case errors.Is(err, store.ErrNotFound):
		return errkind.New(errkind.Conflict, fmt.Errorf("the tree was removed while the write was in progress; nothing was written: %w", err))
	}
	return err
}

// Renew keeps the reservation of a write that is making progress from
// expiring, however long its body takes: it is renewed after each quarter
// of the TTL in which data arrived, so only a write that stalls for the
// whole TTL can be reclaimed.
func (w *Write) Renew(ctx context.Context) error {
	if w.reservation == 0 || w.limits.TTL <= 0 || time.Since(w.renewed) < w.limits.TTL/4 {
		return nil
	}
	if err := w.m.Store.Renew(ctx, w.reservation, w.limits.TTL); err != nil {
		return reservationErr(err)
	}
	w.renewed = time.Now()
	return nil
}

// Refusal is the limit error for a file of fileBytes taking need bytes
// more on disk than the old file (and the missing directories the
// reservation holds), read from the tree's usage without this write's own
// reservation.
func (w *Write) Refusal(ctx context.Context, fileBytes, need uint64) error {
	if max := w.limits.MaxFileBytes; max > 0 && fileBytes > max {
		return &quota.LimitError{Tree: w.label, Limit: quota.LimitMaxFileBytes, Requested: fileBytes, Max: max}
	}
	a, own, err := w.withoutOwn(ctx)
	if err != nil {
		return err
	}
	// The write's inodes were admitted with its reservation: only its
	// bytes are asked again, so the refusal names the limit the body ran
	// into, not one the tree has come to be over since.
	err = w.admit(fileBytes, need+w.dirBytes, 0, 0)(a)
	if err == nil { // room freed up since: still refused, the body was cut off at its allowance
		err = &quota.LimitError{Tree: w.label, Limit: "bytes_hard", Used: a.Used.Bytes, Requested: need, Max: a.Limits.BytesHard}
	}
	return a.NameReserved(err, own)
}

// KernelRefusal turns the kernel's refusal during the write (ENOSPC,
// EDQUOT) into what it means: a full filesystem, or on XFS the tree's
// quota. Only XFS enforces quotas in the kernel, so on the fallback they
// are always the filesystem; on XFS they are the filesystem when it has
// less room than need, the bytes the write still needed. requested is the
// allocation the write had reached.
func (w *Write) KernelRefusal(err error, need, requested uint64) error {
	if !errors.Is(err, unix.EDQUOT) && !errors.Is(err, unix.ENOSPC) {
		return err
	}
	cause := errors.New("nothing was written")
	if !w.m.IsXFS() {
		if full := diskfull.Check(w.m.Root, ^uint64(0), cause); full != nil {
			return full
		}
		return fmt.Errorf("%w; nothing was written", err)
	}
	if full := diskfull.Check(w.m.Root, need, cause); full != nil {
		return full
	}
	q, _ := w.m.Backend.Get(w.tree.ProjectID)
	// Not the hard limit: the kernel's soft one, past its grace timer.
	if ends := q.BytesGraceEnds.Time(); q.BytesSoft > 0 && !ends.IsZero() && !w.m.Now().Before(ends) &&
		(q.BytesHard == 0 || q.Bytes+requested <= q.BytesHard) {
		return &quota.LimitError{Tree: w.label, Limit: "bytes_soft", Used: q.Bytes, Requested: requested, Max: q.BytesSoft, GraceEnded: ends}
	}
	return &quota.LimitError{Tree: w.label, Limit: "bytes_hard", Used: q.Bytes, Requested: requested, Max: q.BytesHard}
}

// Commit records the write's change of delta bytes and its inodes in the
// ledger (fallback), with what its names may grow their directories by
// (settled at Placed), and ends its reservation. The caller commits before
// the file takes its name: a crash in between over-counts until the next
// walk, never under.
//
// ino, when not 0, is the inode of the one file the delta counts whole
// (its blocks, one inode, no directory made with it): an overwrite of
// that file through xfsq later credits what this commit counted
// (store.CommitFile, store.Placed). Recheck first asks whether it may.
func (w *Write) Commit(ctx context.Context, delta int64, ino uint64) error {
	if w.reservation == 0 {
		return nil // XFS: the kernel counted it
	}
	if w.inodes != 1 {
		ino = 0 // the row counts directories too: not one file's
	}
	w.committing = time.Now()
	ctx = store.WithGrace(ctx, w.limits.SoftGrace) // a soft limit reached is journalled with when its grace ends
	if err := w.m.Store.CommitWrite(ctx, w.key(), w.reservation, delta, w.names, int64(w.inodes), ino, w.m.ActorOf(ctx)); err != nil {
		return reservationErr(err)
	}
	// The reservation stays, emptied, until Placed: the file is not in
	// place yet, and a walk beginning meanwhile must keep its ledger row
	// (store.CommitFile, store.BeginWalk).
	w.committed, w.ino, w.inLedger = delta+int64(w.names), ino, true
	return nil
}

// Recheck asks, once the body is whole and before anything of the write is
// made in the tree (its directories, its name) or committed, whether it
// may still land as delta bytes and its inodes: the tree as it is now,
// without the write's own reservation, under the tree's limits in force
// now (the settings, soft_grace and root_budget, as the write began). A
// hard limit lowered or a soft limit whose grace ran out while the body
// arrived refuses it (a *quota.LimitError), as the kernel on XFS refuses
// the allocation. A walk leaves out the bodies of the writes in progress
// as it begins (store.Walk.Writing); where the body sits under its
// temporary name (named: no O_TMPFILE) and the last walk began before the
// reservation and was recorded after it, that walk may have counted the
// body beside its reservation: it is not asked again then, as the double
// count must not refuse the write that reserved the room.
func (w *Write) Recheck(ctx context.Context, delta int64, named bool) error {
	if w.reservation == 0 {
		return nil // XFS: the kernel refuses what it must as it is written
	}
	if named {
		if b, err := w.m.Store.Baseline(ctx, w.key()); err != nil || (b.At.Before(w.reservedAt) && b.End.After(w.reservedAt)) {
			return reservationErr(err)
		}
	}
	a, own, err := w.withoutOwn(ctx)
	if err != nil {
		return reservationErr(err)
	}
	return a.NameReserved(w.admit(0, uint64(max(delta, 0)), w.inodes, w.names)(a), own)
}

// withoutOwn reads the tree as admission sees it, less what this write's
// reservation holds (own): what a demand of the write is asked against
// once the reservation itself no longer answers for it.
func (w *Write) withoutOwn(ctx context.Context) (store.AdmitState, quota.Usage, error) {
	a, err := w.m.Store.Admission(ctx, w.key())
	own := quota.Usage{Bytes: w.held + w.dirBytes + w.names, Inodes: w.inodes}
	a.Used.Bytes -= min(a.Used.Bytes, own.Bytes)
	a.Used.Inodes -= min(a.Used.Inodes, own.Inodes)
	a.RootUsed -= min(a.RootUsed, own.Bytes)
	return a, own, err
}

// Undo takes back a commit whose file never took its name, all but kept:
// what the write left in the tree all the same (the directories it made,
// what its names grew directories by), which stays counted.
func (w *Write) Undo(ctx context.Context, kept quota.Usage) {
	if w.inLedger {
		w.m.Store.Uncommit(ctx, w.key(), w.committed-min(w.committed, int64(kept.Bytes)),
			int64(w.inodes-min(w.inodes, kept.Inodes)), w.ino, w.m.ActorOf(ctx))
		w.inLedger = false
	}
}

// Placed ends a committed write once its file is in place: the empty
// reservation that marked it as not in place yet goes, what the write's
// names grew their directories by (grown, measured around the link) is
// charged in place of the estimate its commit counted (store.Grown), and
// what its rename replaced and unlinked, measured then, is credited as far
// as the tree's usage counted it (store.Replaced), as of since (when the
// rename began: a walk that ended after it may have seen the old file
// gone). On XFS the kernel counted all of it: nothing to do.
func (w *Write) Placed(ctx context.Context, replaced Replaced, grown uint64, since time.Time) {
	if w.reservation != 0 {
		g := store.Grown{Estimated: w.names, Measured: grown, Committed: w.committing}
		w.m.Store.Placed(context.WithoutCancel(ctx), w.key(), w.reservation, store.Replaced(replaced), g, w.m.ActorOf(ctx), since)
		w.reservation = 0
	}
}

// Replaced is what an overwrite's rename unlinked (files.Replaced).
type Replaced = files.Replaced

// Release gives back the reservation of a write that did not finish (or
// whose commit was undone).
func (w *Write) Release(ctx context.Context) {
	if w.reservation != 0 {
		w.m.Store.Release(context.WithoutCancel(ctx), w.reservation)
		w.reservation = 0
	}
}
