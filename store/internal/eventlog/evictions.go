package eventlog

import (
	"context"
	"encoding/json"

	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/store/internal/migrations"
)

// EvictionKey is what identifies one deletion across its records.
type EvictionKey struct {
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
	var k EvictionKey
	if err := json.Unmarshal(data, &k); err != nil {
		return err
	}
	if k.State == journal.StatePending {
		if err := t.Hold(ctx, k.Holder); err != nil {
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
	return t.TouchVersion(ctx, project)
}

// TouchVersion moves project's version as migration 11's triggers do for
// a change of its rows. A deletion done changes what a read of the project
// answers (its path leaves the overview's top_paths) even when it credits
// the ledger nothing — a file a hard link keeps, or one the tenant changed
// since the walk — and with no row of the versioned tables changed the
// change mark stood, so the fallback's overview, restamped while the mark
// stands, listed the deleted path for up to OverviewRebuildAge.
func (t *Tx) TouchVersion(ctx context.Context, project string) error {
	order, args := migrations.ChangeOrder(t.s.Postgres, "?"), []any{t.s.Host, project}
	if !t.s.Postgres {
		args = append(args, t.s.Host)
	}
	_, err := t.Exec(ctx, `INSERT INTO project_versions (host, project, version, changed) VALUES (?, ?, 1, `+order+`)
		ON CONFLICT (host, project) DO UPDATE SET version = project_versions.version + 1, changed = excluded.changed`, args...)
	return err
}

// KeyOf is rec's key as evictions_pending holds it: read back from the
// record's JSON as trackEviction reads it, so that a name that is not
// valid UTF-8 (a tenant's, stored with U+FFFD in its place) is the same
// key in both.
func KeyOf(rec journal.Evicted) (EvictionKey, error) {
	var k EvictionKey
	data, err := json.Marshal(rec)
	if err == nil {
		err = json.Unmarshal(data, &k)
	}
	return k, err
}
