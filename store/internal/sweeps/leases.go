package sweeps

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/store/internal/base"
)

// Lease is a run's claim on a project: while it has not expired, no sweep
// touches the project.
type Lease struct {
	Project   string    `json:"project" db:"project"`
	Run       string    `json:"run" db:"run"`
	ExpiresAt time.Time `json:"expires_at" db:"-"`
	Expires   int64     `json:"-" db:"expires_at"`
}

// leaseLock is the lock key of a project's leases: taken by AcquireLease
// and by AppendPendingUnlessLeased, so a lease and a deletion's pending
// record are ordered one way or the other, never interleaved.
func leaseLock(host, project string) string { return "lease:" + host + ":" + project }

// AcquireLease takes or renews a run's lease until expires, and returns
// when it now expires: a renewal never shortens a lease (a run that asked
// for longer keeps it), so that is expires or later.
func (t *Tx) AcquireLease(ctx context.Context, project, run string, expires time.Time) (time.Time, error) {
	if err := t.Lock(ctx, leaseLock(t.s.Host, project)); err != nil {
		return time.Time{}, err
	}
	_, err := t.Exec(ctx, `INSERT INTO leases (host, project, run, expires_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (host, project, run) DO UPDATE SET expires_at =
			CASE WHEN excluded.expires_at > leases.expires_at THEN excluded.expires_at ELSE leases.expires_at END`,
		t.s.Host, project, run, base.ToMicros(expires))
	if err != nil {
		return time.Time{}, err
	}
	var micros int64
	if err := t.Get(ctx, &micros, `SELECT expires_at FROM leases WHERE host = ? AND project = ? AND run = ?`, t.s.Host, project, run); err != nil {
		return time.Time{}, err
	}
	return base.FromMicros(micros), nil
}

// ReleaseLease drops a run's lease; it reports whether there was one.
func (t *Tx) ReleaseLease(ctx context.Context, project, run string) (bool, error) {
	res, err := t.Exec(ctx, `DELETE FROM leases WHERE host = ? AND project = ? AND run = ?`, t.s.Host, project, run)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// Leases lists this host's leases, expired ones included, by project and run.
func (s *Store) Leases(ctx context.Context) ([]Lease, error) {
	var out []Lease
	if err := s.Sel(ctx, &out, `SELECT project, run, expires_at FROM leases WHERE host = ? ORDER BY project, run`, s.Host); err != nil {
		return nil, err
	}
	for i := range out {
		out[i].ExpiresAt = base.FromMicros(out[i].Expires)
	}
	return out, nil
}

// ActiveLeases returns, per project, the runs whose leases have not expired at now.
func (s *Store) ActiveLeases(ctx context.Context, now time.Time) (map[string][]string, error) {
	all, err := s.Leases(ctx)
	if err != nil {
		return nil, err
	}
	active := map[string][]string{}
	for _, l := range all {
		if l.ExpiresAt.After(now) {
			active[l.Project] = append(active[l.Project], l.Run)
		}
	}
	return active, nil
}

// Leased reports whether a project holds an unexpired lease at now: the
// sweeper asks it before every deletion, so it reads one project only.
func (s *Store) Leased(ctx context.Context, project string, now time.Time) (bool, error) {
	var n int
	err := s.Get(ctx, &n, `SELECT COUNT(*) FROM leases WHERE host = ? AND project = ? AND expires_at > ?`, s.Host, project, base.ToMicros(now))
	return n > 0, err
}

// AppendPendingUnlessLeased journals rec, the pending storage.evicted record
// of a deletion in project, only if the project holds no unexpired lease at
// now; leased says it held one and nothing was written. The check and the
// record are one transaction under the lease lock: a lease taken after the
// sweeper last looked either stops the deletion here or comes after its
// record, never in between (on SQLite the write lock taken at BEGIN orders
// them; on PostgreSQL the advisory lock AcquireLease takes too).
func (s *Store) AppendPendingUnlessLeased(ctx context.Context, project, actor string, rec journal.Evicted, now time.Time) (leased bool, err error) {
	err = s.InTx(ctx, func(tx *Tx) error {
		if err := tx.holdsSweepLock(ctx, project, rec); err != nil {
			return err
		}
		if err := tx.Lock(ctx, leaseLock(s.Host, project)); err != nil {
			return err
		}
		var n int
		if err := tx.Get(ctx, &n, `SELECT COUNT(*) FROM leases WHERE host = ? AND project = ? AND expires_at > ?`, s.Host, project, base.ToMicros(now)); err != nil {
			return err
		}
		if leased = n > 0; leased {
			return nil
		}
		return tx.AppendEvent(ctx, project, actor, rec)
	})
	return leased, err
}

// holdsSweepLock fences a sweep's deletion (rec names its sweep and
// holder): unless the project's sweep lock is still the holder's, a
// *LockLostError. The lock is taken over only after the holder's lease
// expired, and this renews that lease in the same order (the sweep lock's
// key): a sweep paused past its expiry stops at its next deletion instead
// of deleting beside the sweep that took over.
func (t *Tx) holdsSweepLock(ctx context.Context, project string, rec journal.Evicted) error {
	if rec.SweepID == "" || rec.Holder == "" {
		return nil
	}
	if err := t.Lock(ctx, sweepLock(t.s.Host, project)); err != nil {
		return err
	}
	var holder string
	err := t.Get(ctx, &holder, `SELECT holder FROM sweep_locks WHERE host = ? AND project = ?`, t.s.Host, project)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if holder != rec.Holder {
		return &LockLostError{Project: project, Holder: holder}
	}
	return t.Hold(ctx, rec.Holder)
}

// HeldLeases returns the leases of project unexpired at now, under the
// project's lease lock: a removal that reads them and marks the project
// removing in one transaction is ordered with every AcquireLease, which
// takes the same lock and then reads the project's state (ProjectState).
func (t *Tx) HeldLeases(ctx context.Context, project string, now time.Time) ([]Lease, error) {
	if err := t.Lock(ctx, leaseLock(t.s.Host, project)); err != nil {
		return nil, err
	}
	var out []Lease
	if err := t.Sel(ctx, &out, `SELECT project, run, expires_at FROM leases WHERE host = ? AND project = ? AND expires_at > ? ORDER BY run`,
		t.s.Host, project, base.ToMicros(now)); err != nil {
		return nil, err
	}
	for i := range out {
		out[i].ExpiresAt = base.FromMicros(out[i].Expires)
	}
	return out, nil
}

// ProjectState is a project's state as this transaction sees it; ErrNotFound when there is none.
func (t *Tx) ProjectState(ctx context.Context, name string) (string, error) {
	var state string
	err := t.Get(ctx, &state, `SELECT state FROM projects WHERE host = ? AND name = ?`, t.s.Host, name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("project %q: %w", name, base.ErrNotFound)
	}
	return state, err
}
