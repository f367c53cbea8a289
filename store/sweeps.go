package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/xfsq/xfsq/journal"
)

// LockSweep takes the sweep lock of a project for c.Holder. If another
// holder has it, c.Gone decides whether that holder is gone (by its
// process, or its lease's expiry): its lock is then taken over and the
// takeover journalled; otherwise busy names it.
func (s *Store) LockSweep(ctx context.Context, project string, c Claim) (busy string, err error) {
	err = s.InTx(ctx, func(tx *Tx) error {
		if err := tx.Lock(ctx, sweepLock(s.Host, project)); err != nil {
			return err
		}
		if err := tx.hold(ctx, c.Holder); err != nil {
			return err
		}
		var other string
		err := tx.Get(ctx, &other, `SELECT holder FROM sweep_locks WHERE host = ? AND project = ?`, s.Host, project)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			_, err = tx.Exec(ctx, `INSERT INTO sweep_locks (host, project, holder, at) VALUES (?, ?, ?, ?)`, s.Host, project, c.Holder, toMicros(time.Now()))
			return err
		case err != nil:
			return err
		case other == c.Holder:
			_, err = tx.Exec(ctx, `UPDATE sweep_locks SET at = ? WHERE host = ? AND project = ?`, toMicros(time.Now()), s.Host, project)
			return err
		}
		l, why, err := tx.gone(ctx, c, other)
		if err != nil {
			return err
		}
		if why == "" {
			busy = other
			return nil
		}
		if _, err = tx.Exec(ctx, `UPDATE sweep_locks SET holder = ?, at = ? WHERE host = ? AND project = ?`, c.Holder, toMicros(time.Now()), s.Host, project); err != nil {
			return err
		}
		return tx.tookOver(ctx, c, project, "sweep_lock", project, other, why, l)
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
		return tx.touchVersion(ctx, project)
	})
}

// PendingEviction is a storage.evicted record whose deletion was never
// confirmed (done or failed): its writer stopped in between.
type PendingEviction struct {
	Project string
	Record  journal.Evicted
}

// evictionKey is what identifies one deletion across its records.
type evictionKey struct {
	Holder     string `json:"holder"`
	SweepID    string `json:"sweep_id"`
	Path       string `json:"path"`
	DeletionID string `json:"deletion_id"`
	State      string `json:"state"`
}

// trackEviction keeps evictions_pending in step with the storage.evicted
// record id (payload data) just written in the same transaction: a pending
// record enters it, any later record of the same deletion (sweep, path and,
// outside sweeps, deletion id) leaves it. A deletion done moves its
// project's version (touchVersion), unless a sweep is confirming its own:
// EndSweep moves it once for all of the project's.
func (t *Tx) trackEviction(ctx context.Context, id int64, project string, data []byte) error {
	var k evictionKey
	if err := json.Unmarshal(data, &k); err != nil {
		return err
	}
	if k.State == journal.StatePending {
		if err := t.hold(ctx, k.Holder); err != nil {
			return err
		}
		_, err := t.Exec(ctx, `INSERT INTO evictions_pending (host, sweep_id, path, deletion_id, event_id) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (host, sweep_id, path, deletion_id) DO UPDATE SET event_id = excluded.event_id`, t.s.Host, k.SweepID, k.Path, k.DeletionID, id)
		return err
	}
	if _, err := t.Exec(ctx, `DELETE FROM evictions_pending WHERE host = ? AND sweep_id = ? AND path = ? AND deletion_id = ?`, t.s.Host, k.SweepID, k.Path, k.DeletionID); err != nil {
		return err
	}
	if k.State != journal.StateDone || project == "" || t.SweepConfirms {
		return nil
	}
	return t.touchVersion(ctx, project)
}

// touchVersion moves project's version as migration 11's triggers do for
// a change of its rows. A deletion done changes what a read of the project
// answers (its path leaves the overview's top_paths) even when it credits
// the ledger nothing — a file a hard link keeps, or one the tenant changed
// since the walk — and with no row of the versioned tables changed the
// change mark stood, so the fallback's overview, restamped while the mark
// stands, listed the deleted path for up to OverviewRebuildAge.
func (t *Tx) touchVersion(ctx context.Context, project string) error {
	order, args := changeOrder(t.s.Postgres, "?"), []any{t.s.Host, project}
	if !t.s.Postgres {
		args = append(args, t.s.Host)
	}
	_, err := t.Exec(ctx, `INSERT INTO project_versions (host, project, version, changed) VALUES (?, ?, 1, `+order+`)
		ON CONFLICT (host, project) DO UPDATE SET version = project_versions.version + 1, changed = excluded.changed`, args...)
	return err
}

// keyOf is rec's key as evictions_pending holds it: read back from the
// record's JSON as trackEviction reads it, so that a name that is not
// valid UTF-8 (a tenant's, stored with U+FFFD in its place) is the same
// key in both.
func keyOf(rec journal.Evicted) (evictionKey, error) {
	var k evictionKey
	data, err := json.Marshal(rec)
	if err == nil {
		err = json.Unmarshal(data, &k)
	}
	return k, err
}

// PendingEvictions finds this host's pending storage.evicted records that
// no later record of the same sweep and path has settled, oldest first.
func (s *Store) PendingEvictions(ctx context.Context) ([]PendingEviction, error) {
	var rows []eventRow
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
	k, err := keyOf(rec)
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
