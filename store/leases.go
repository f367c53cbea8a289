package store

import (
	"context"
	"time"
)

// Lease is a run's claim on a project: while it has not expired, no sweep
// touches the project.
type Lease struct {
	Project   string    `json:"project" db:"project"`
	Run       string    `json:"run" db:"run"`
	ExpiresAt time.Time `json:"expires_at" db:"-"`
	Expires   int64     `json:"-" db:"expires_at"`
}

// AcquireLease takes or renews a run's lease until expires.
func (t *Tx) AcquireLease(ctx context.Context, project, run string, expires time.Time) error {
	_, err := t.exec(ctx, `INSERT INTO leases (host, project, run, expires_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (host, project, run) DO UPDATE SET expires_at = excluded.expires_at`,
		t.s.Host, project, run, toMicros(expires))
	return err
}

// ReleaseLease drops a run's lease; it reports whether there was one.
func (t *Tx) ReleaseLease(ctx context.Context, project, run string) (bool, error) {
	res, err := t.exec(ctx, `DELETE FROM leases WHERE host = ? AND project = ? AND run = ?`, t.s.Host, project, run)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// Leases lists this host's leases, expired ones included, by project and run.
func (s *Store) Leases(ctx context.Context) ([]Lease, error) {
	var out []Lease
	if err := s.sel(ctx, &out, `SELECT project, run, expires_at FROM leases WHERE host = ? ORDER BY project, run`, s.Host); err != nil {
		return nil, err
	}
	for i := range out {
		out[i].ExpiresAt = fromMicros(out[i].Expires)
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
	err := s.get(ctx, &n, `SELECT COUNT(*) FROM leases WHERE host = ? AND project = ? AND expires_at > ?`, s.Host, project, toMicros(now))
	return n > 0, err
}
