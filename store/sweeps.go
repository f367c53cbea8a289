package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"
)

// EventSwept is journalled once at the end of each sweep.
const EventSwept = "storage.swept"

// LockSweep takes the sweep lock of a project for holder. If another holder
// has it, stale(otherHolder) decides whether that holder is gone (its lock
// is then taken over); otherwise busy names it.
func (s *Store) LockSweep(ctx context.Context, project, holder string, stale func(string) bool) (busy string, err error) {
	err = s.InTx(ctx, func(tx *Tx) error {
		if err := tx.lock(ctx, "sweep:"+s.Host+":"+project); err != nil {
			return err
		}
		var other string
		err := tx.get(ctx, &other, `SELECT holder FROM sweep_locks WHERE host = ? AND project = ?`, s.Host, project)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			_, err = tx.exec(ctx, `INSERT INTO sweep_locks (host, project, holder, at) VALUES (?, ?, ?, ?)`, s.Host, project, holder, toMicros(time.Now()))
			return err
		case err != nil:
			return err
		case other == holder || stale(other):
			_, err = tx.exec(ctx, `UPDATE sweep_locks SET holder = ?, at = ? WHERE host = ? AND project = ?`, holder, toMicros(time.Now()), s.Host, project)
			return err
		}
		busy = other
		return nil
	})
	return busy, err
}

// UnlockSweep releases holder's sweep lock of a project.
func (s *Store) UnlockSweep(ctx context.Context, project, holder string) error {
	return s.InTx(ctx, func(tx *Tx) error {
		_, err := tx.exec(ctx, `DELETE FROM sweep_locks WHERE host = ? AND project = ? AND holder = ?`, s.Host, project, holder)
		return err
	})
}

// PendingEviction is a storage.evicted record whose deletion was never
// confirmed (done or failed): its writer stopped in between.
type PendingEviction struct {
	Project string
	Record  map[string]any
}

// PendingEvictions finds pending storage.evicted records without a later
// record for the same sweep and path.
func (s *Store) PendingEvictions(ctx context.Context) ([]PendingEviction, error) {
	var rows []eventRow
	if err := s.sel(ctx, &rows, `SELECT id, at, type, host, project, actor, payload FROM events WHERE host = ? AND type = ? ORDER BY id`,
		s.Host, EventEvicted); err != nil {
		return nil, err
	}
	type key struct{ sweep, path string }
	pending := map[key]PendingEviction{}
	var order []key
	for _, r := range rows {
		var rec map[string]any
		if json.Unmarshal([]byte(r.Payload), &rec) != nil {
			continue
		}
		sweep, _ := rec["sweep_id"].(string)
		path, _ := rec["path"].(string)
		k := key{sweep, path}
		if rec["state"] == "pending" {
			if _, seen := pending[k]; !seen {
				order = append(order, k)
			}
			pending[k] = PendingEviction{Project: r.Project, Record: rec}
		} else {
			delete(pending, k)
		}
	}
	var out []PendingEviction
	for _, k := range order {
		if p, ok := pending[k]; ok {
			out = append(out, p)
		}
	}
	return out, nil
}
