package sweeps

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/xfsq/xfsq/store/internal/base"
	"github.com/xfsq/xfsq/store/internal/holders"
)

// PassState is what the store keeps of one scheduled pass of this host.
type PassState struct {
	Pass       string
	Holder     string    // the operation running it now; "" when none
	StartedAt  time.Time // of the last pass claimed; zero: never
	FinishedAt time.Time // of the last pass that ran to its end; zero: never
}

// Pass reads a pass's state; a pass never run has the zero state.
func (s *Store) Pass(ctx context.Context, pass string) (PassState, error) {
	var row struct {
		Holder     string `db:"holder"`
		StartedAt  int64  `db:"started_at"`
		FinishedAt int64  `db:"finished_at"`
	}
	err := s.Get(ctx, &row, `SELECT holder, started_at, finished_at FROM passes WHERE host = ? AND pass = ?`, s.Host, pass)
	if errors.Is(err, sql.ErrNoRows) {
		return PassState{Pass: pass}, nil
	}
	return PassState{Pass: pass, Holder: row.Holder, StartedAt: base.FromMicros(row.StartedAt), FinishedAt: base.FromMicros(row.FinishedAt)}, err
}

// ClaimPass takes a pass for c.Holder when it is due at now: no live
// holder runs it (c.Gone decides whether another holder is gone: its
// takeover is then journalled), and either the last one started interval
// or more before now, or it never finished (its process died: it is run
// again at once). It reports whether c.Holder has it, and the state it
// found. Claims are serialised per pass, across processes: of two
// claimers, one gets it.
func (s *Store) ClaimPass(ctx context.Context, pass string, c holders.Claim, now time.Time, interval time.Duration) (bool, PassState, error) {
	var st PassState
	claimed := false
	err := s.InTx(ctx, func(tx *Tx) error {
		if err := tx.Lock(ctx, "pass:"+s.Host+":"+pass); err != nil {
			return err
		}
		var row struct {
			Holder     string `db:"holder"`
			StartedAt  int64  `db:"started_at"`
			FinishedAt int64  `db:"finished_at"`
		}
		err := tx.Get(ctx, &row, `SELECT holder, started_at, finished_at FROM passes WHERE host = ? AND pass = ?`, s.Host, pass)
		exists := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		st = PassState{Pass: pass, Holder: row.Holder, StartedAt: base.FromMicros(row.StartedAt), FinishedAt: base.FromMicros(row.FinishedAt)}
		var lease holders.HolderLease
		why := ""
		if row.Holder != "" && row.Holder != c.Holder {
			if lease, why, err = tx.IsGone(ctx, c, row.Holder); err != nil {
				return err
			}
			if why == "" {
				return nil // running under a live holder
			}
		}
		if exists && why == "" && row.Holder == "" && now.Sub(st.StartedAt) < interval {
			return nil // ran less than interval ago
		}
		if err := tx.Hold(ctx, c.Holder); err != nil {
			return err
		}
		if exists {
			_, err = tx.Exec(ctx, `UPDATE passes SET holder = ?, started_at = ? WHERE host = ? AND pass = ?`, c.Holder, base.ToMicros(now), s.Host, pass)
		} else {
			_, err = tx.Exec(ctx, `INSERT INTO passes (host, pass, holder, started_at) VALUES (?, ?, ?, ?)`, s.Host, pass, c.Holder, base.ToMicros(now))
		}
		if err != nil {
			return err
		}
		claimed = true
		if why != "" {
			return tx.TookOver(ctx, c, "", "pass", pass, row.Holder, why, lease)
		}
		return nil
	})
	return claimed, st, err
}

// FinishPass records that holder's pass ran to its end at at, and frees it.
func (s *Store) FinishPass(ctx context.Context, pass, holder string, at time.Time) error {
	return s.InTx(ctx, func(tx *Tx) error {
		_, err := tx.Exec(ctx, `UPDATE passes SET holder = '', finished_at = ? WHERE host = ? AND pass = ? AND holder = ?`, base.ToMicros(at), s.Host, pass, holder)
		return err
	})
}

// AbandonPass frees holder's pass without recording it as finished (it
// stopped on an error or was cancelled): the next claim runs it again at
// once, as after a crash, instead of an interval later.
func (s *Store) AbandonPass(ctx context.Context, pass, holder string) error {
	return s.InTx(ctx, func(tx *Tx) error {
		_, err := tx.Exec(ctx, `UPDATE passes SET holder = '', started_at = 0 WHERE host = ? AND pass = ? AND holder = ?`, s.Host, pass, holder)
		return err
	})
}
