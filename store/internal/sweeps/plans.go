package sweeps

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/xfsq/xfsq/store/internal/base"
)

// SavedPlan is what the store keeps of a sweep plan saved for review: the
// hash of the file's content, so that applying it can tell the plan that
// was made from an edited one, and whether it was applied.
type SavedPlan struct {
	ID        string
	Digest    string // SHA-256 of the plan file's content, hex
	CreatedAt time.Time
	AppliedAt time.Time // zero: not yet
	// Body is the plan file's content as saved; nil for a plan saved
	// before the store kept it.
	Body []byte
}

// RecordPlan keeps the digest and the content of a plan just made.
func (s *Store) RecordPlan(ctx context.Context, id, digest string, at time.Time, body []byte) error {
	return s.InTx(ctx, func(tx *Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO sweep_plans (host, plan_id, digest, created_at, body) VALUES (?, ?, ?, ?, ?)`, s.Host, id, digest, base.ToMicros(at), body)
		return err
	})
}

// Plan reads what the store keeps of this host's plan id; ErrNotFound
// when this store never made it.
func (s *Store) Plan(ctx context.Context, id string) (SavedPlan, error) {
	var row struct {
		Digest    string `db:"digest"`
		CreatedAt int64  `db:"created_at"`
		AppliedAt int64  `db:"applied_at"`
		Body      []byte `db:"body"`
	}
	err := s.Get(ctx, &row, `SELECT digest, created_at, applied_at, body FROM sweep_plans WHERE host = ? AND plan_id = ?`, s.Host, id)
	if errors.Is(err, sql.ErrNoRows) {
		return SavedPlan{}, base.ErrNotFound
	}
	if err != nil {
		return SavedPlan{}, err
	}
	return SavedPlan{ID: id, Digest: row.Digest, CreatedAt: base.FromMicros(row.CreatedAt), AppliedAt: base.FromMicros(row.AppliedAt), Body: row.Body}, nil
}

// MarkPlanApplied records that the plan (with this digest) is being
// applied; false when it was already, by this process or another: a plan
// runs once.
func (s *Store) MarkPlanApplied(ctx context.Context, id, digest string, at time.Time) (bool, error) {
	var n int64
	err := s.InTx(ctx, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `UPDATE sweep_plans SET applied_at = ? WHERE host = ? AND plan_id = ? AND digest = ? AND applied_at = 0`,
			base.ToMicros(at), s.Host, id, digest)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n == 1, err
}
