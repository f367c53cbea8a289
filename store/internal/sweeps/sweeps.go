package sweeps

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/store/internal/base"
	"github.com/xfsq/xfsq/store/internal/eventlog"
	"github.com/xfsq/xfsq/store/internal/holders"
)

// LockSweep takes the sweep lock of a project for c.Holder. If another
// holder has it, c.Gone decides whether that holder is gone (by its
// process, or its lease's expiry): its lock is then taken over and the
// takeover journalled; otherwise busy names it.
func (s *Store) LockSweep(ctx context.Context, project string, c holders.Claim) (busy string, err error) {
	err = s.InTx(ctx, func(tx *Tx) error {
		if err := tx.Lock(ctx, sweepLock(s.Host, project)); err != nil {
			return err
		}
		if err := tx.Hold(ctx, c.Holder); err != nil {
			return err
		}
		var other string
		err := tx.Get(ctx, &other, `SELECT holder FROM sweep_locks WHERE host = ? AND project = ?`, s.Host, project)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			_, err = tx.Exec(ctx, `INSERT INTO sweep_locks (host, project, holder, at) VALUES (?, ?, ?, ?)`, s.Host, project, c.Holder, base.ToMicros(time.Now()))
			return err
		case err != nil:
			return err
		case other == c.Holder:
			_, err = tx.Exec(ctx, `UPDATE sweep_locks SET at = ? WHERE host = ? AND project = ?`, base.ToMicros(time.Now()), s.Host, project)
			return err
		}
		l, why, err := tx.IsGone(ctx, c, other)
		if err != nil {
			return err
		}
		if why == "" {
			busy = other
			return nil
		}
		if _, err = tx.Exec(ctx, `UPDATE sweep_locks SET holder = ?, at = ? WHERE host = ? AND project = ?`, c.Holder, base.ToMicros(time.Now()), s.Host, project); err != nil {
			return err
		}
		return tx.TookOver(ctx, c, project, "sweep_lock", project, other, why, l)
	})
	return busy, err
}

// sweepLock is the lock key of a project's sweep lock: taken by LockSweep
// and by AppendPendingUnlessLeased, so that a takeover and a deletion's
// pending record are ordered one way or the other.
func sweepLock(host, project string) string { return "sweep:" + host + ":" + project }

// LockLostError is a sweep's deletion refused before anything was removed:
// the project's sweep lock is no longer the sweep's (its lease expired and
// another holder took the lock over, or it was released).
type LockLostError struct {
	Project string
	Holder  string // who holds it now; "" when nobody does
}

func (e *LockLostError) Error() string {
	if e.Holder == "" {
		return fmt.Sprintf("project %q: this sweep no longer holds its sweep lock", e.Project)
	}
	return fmt.Sprintf("project %q: its sweep lock was taken over by %s (this sweep's lease had expired)", e.Project, e.Holder)
}

// UnlockSweep releases holder's sweep lock of a project.
func (s *Store) UnlockSweep(ctx context.Context, project, holder string) error {
	return s.EndSweep(ctx, project, holder, false)
}

// EndSweep releases holder's sweep lock of a project as UnlockSweep does
// and, when the sweep deleted anything there (deleted), moves the
// project's version in the same transaction: a sweep's confirmations of
// its own deletions (ConfirmPending) leave that to this, one statement per
// project swept instead of one per deletion. Called whatever the sweep's
// outcome, once its deletions are journalled.
func (s *Store) EndSweep(ctx context.Context, project, holder string, deleted bool) error {
	return s.InTx(ctx, func(tx *Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM sweep_locks WHERE host = ? AND project = ? AND holder = ?`, s.Host, project, holder); err != nil {
			return err
		}
		if !deleted {
			return nil
		}
		return tx.TouchVersion(ctx, project)
	})
}

// PendingEviction is a storage.evicted record whose deletion was never
// confirmed (done or failed): its writer stopped in between.
type PendingEviction struct {
	Project string
	Record  journal.Evicted
}

// PendingEvictions finds this host's pending storage.evicted records that
// no later record of the same sweep and path has settled, oldest first.
func (s *Store) PendingEvictions(ctx context.Context) ([]PendingEviction, error) {
	var rows []eventlog.EventRow
	if err := s.Sel(ctx, &rows, `SELECT e.id, e.at, e.type, e.host, e.project, e.actor, e.payload
		FROM evictions_pending p JOIN events e ON e.id = p.event_id
		WHERE p.host = ? ORDER BY e.id`, s.Host); err != nil {
		return nil, err
	}
	out := make([]PendingEviction, 0, len(rows))
	for _, r := range rows {
		var rec journal.Evicted
		if err := json.Unmarshal([]byte(r.Payload), &rec); err != nil {
			return nil, fmt.Errorf("journal record %d: %w", r.ID, err)
		}
		out = append(out, PendingEviction{Project: r.Project, Record: rec})
	}
	return out, nil
}

// SettledElsewhereError is a deletion's confirmation refused: its pending
// record was settled meanwhile by another process, which took this one
// for gone (its lease lapsed while it was paused or cut off). The other
// process's record stands; a second would say the deletion happened twice.
type SettledElsewhereError struct{ Path string }

func (e *SettledElsewhereError) Error() string {
	return "the deletion of " + e.Path + " was settled by another process meanwhile (this one's lease had lapsed): its record stands"
}

// ConfirmPending journals rec, the record settling a deletion this process
// journalled as pending, unless another process settled it first
// (SettlePending's gate): then a *SettledElsewhereError. A sweep's record
// (rec.SweepID) leaves its project's version to the sweep's EndSweep.
func (s *Store) ConfirmPending(ctx context.Context, project, actor string, rec journal.Evicted) error {
	settled, err := s.settle(ctx, project, actor, rec, rec.SweepID != "")
	if err == nil && !settled {
		err = &SettledElsewhereError{Path: rec.Path}
	}
	return err
}

// SettlePending journals rec, a settled record (done or failed) of a
// deletion found pending, only if that deletion is still pending: its own
// process may have settled it since it was read (and exited, so that it
// looked orphaned), and a second settled record would say it was deleted
// twice. It reports whether rec was journalled.
func (s *Store) SettlePending(ctx context.Context, project, actor string, rec journal.Evicted) (bool, error) {
	return s.settle(ctx, project, actor, rec, false)
}

// settle is SettlePending; bySweep: the sweep that made the deletion
// confirms it, and moves its project's version at EndSweep.
func (s *Store) settle(ctx context.Context, project, actor string, rec journal.Evicted, bySweep bool) (bool, error) {
	k, err := eventlog.KeyOf(rec)
	if err != nil {
		return false, err
	}
	settled := false
	err = s.InTx(ctx, func(tx *Tx) error {
		// The delete is the gate: of two settlers, one removes the row.
		res, err := tx.Exec(ctx, `DELETE FROM evictions_pending WHERE host = ? AND sweep_id = ? AND path = ? AND deletion_id = ?`,
			s.Host, k.SweepID, k.Path, k.DeletionID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		settled = true
		tx.SweepConfirms = bySweep
		return tx.AppendEvent(ctx, project, actor, rec)
	})
	return settled, err
}
