package eventlog

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/xfsq/xfsq/store/internal/base"
)

// A journal checkpoint (migration 22) is a host's JournalTotals as of a
// position in its journal, kept so that a restarted server's first read
// sums only the records after it. Its totals are a function of the
// journal alone (the sums of the followed records up to up_to), never of a
// follower's state; a checkpoint only moves forward, from the position it
// was read at to a later one (SaveJournalCheckpoint), so two writers never
// add the same records twice; and a prune removes a followed record only
// once the checkpoint holds it (PruneEvents).

// journalCheckpoint is the checkpoint's totals as stored.
type journalCheckpoint struct {
	Deletions []DeletionTotal `json:"deletions,omitempty"`
	Sweeps    Histogram       `json:"sweeps"`
	Walks     []WalkTotal     `json:"walks,omitempty"`
	LastPass  int64           `json:"last_pass,omitempty"` // Unix microseconds
}

// JournalCheckpoint is this host's checkpoint when it has one counted in
// buckets (false: none, or one in other buckets, which is not used): the
// totals of its records up to its UpTo.
func (s *Store) JournalCheckpoint(ctx context.Context, buckets JournalBuckets) (JournalTotals, bool, error) {
	return boundedRead2(ctx, s, func(ctx context.Context) (JournalTotals, bool, error) {
		return s.journalCheckpoint(ctx, s.SQL, buckets)
	})
}

func (s *Store) journalCheckpoint(ctx context.Context, db sqlx.QueryerContext, buckets JournalBuckets) (JournalTotals, bool, error) {
	none := JournalTotals{Buckets: buckets}
	want, err := json.Marshal(buckets)
	if err != nil {
		return none, false, err
	}
	var row struct {
		UpTo    int64  `db:"up_to"`
		Buckets string `db:"buckets"`
		Totals  string `db:"totals"`
	}
	err = sqlx.GetContext(ctx, db, &row, s.SQL.Rebind(`SELECT up_to, buckets, totals FROM journal_checkpoints WHERE host = ?`), s.Host)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && row.Buckets != string(want)) {
		return none, false, nil
	}
	if err != nil {
		return none, false, fmt.Errorf("read the journal's checkpoint: %w", err)
	}
	var cp journalCheckpoint
	if err := json.Unmarshal([]byte(row.Totals), &cp); err != nil {
		return none, false, fmt.Errorf("read the journal's checkpoint: %w", err)
	}
	return JournalTotals{From: row.UpTo, UpTo: row.UpTo, Buckets: buckets, Deletions: cp.Deletions, Sweeps: cp.Sweeps,
		Walks: cp.Walks, LastPass: base.FromMicros(cp.LastPass)}, true, nil
}

// boundedRead2 is boundedRead of a read with two results.
func boundedRead2[T any, U any](ctx context.Context, s *Store, read func(context.Context) (T, U, error)) (T, U, error) {
	type pair struct {
		t T
		u U
	}
	p, err := base.BoundedRead(ctx, s.DB, func(ctx context.Context) (pair, error) {
		t, u, err := read(ctx)
		return pair{t, u}, err
	})
	return p.t, p.u, err
}

// SaveJournalCheckpoint makes t this host's checkpoint, written at at, if
// the checkpoint is still the one t began from (t.From; 0: none, or one in
// other buckets) and t goes past it, in one statement; false: it did not
// (another writer moved it first, or there was nothing new).
func (s *Store) SaveJournalCheckpoint(ctx context.Context, t JournalTotals, at time.Time) (bool, error) {
	if t.UpTo <= t.From {
		return false, nil
	}
	buckets, err := json.Marshal(t.Buckets)
	if err != nil {
		return false, err
	}
	totals, err := json.Marshal(journalCheckpoint{Deletions: t.Deletions, Sweeps: t.Sweeps, Walks: t.Walks, LastPass: lastPassMicros(t.LastPass)})
	if err != nil {
		return false, err
	}
	var n int64
	err = s.InTx(ctx, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `INSERT INTO journal_checkpoints (host, up_to, written_at, buckets, totals) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (host) DO UPDATE SET up_to = excluded.up_to, written_at = excluded.written_at, buckets = excluded.buckets, totals = excluded.totals
		WHERE (journal_checkpoints.up_to = ? AND journal_checkpoints.buckets = excluded.buckets)
			OR (? = 0 AND journal_checkpoints.buckets <> excluded.buckets)`,
			s.Host, t.UpTo, base.ToMicros(at), string(buckets), string(totals), t.From, t.From)
		if err == nil {
			n, err = res.RowsAffected()
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("write the journal's checkpoint: %w", err)
	}
	return n == 1, nil
}

// JournalCheckpointSpan is how many record IDs one step of
// AdvanceJournalCheckpoint sums at most: its statements stay well within a
// statement_timeout of seconds however long the journal (a variable: the
// tests step through a short journal).
var JournalCheckpointSpan int64 = 100_000

// AdvanceJournalCheckpoint moves this host's checkpoint in buckets past
// its followed records older than horizon, journalCheckpointSpan IDs a
// step, each step summed from the checkpoint and written on its own (a
// step done stays done, should a later one fail). False: it did not move
// (nothing new, or another writer moved it first, which it leaves).
func (s *Store) AdvanceJournalCheckpoint(ctx context.Context, horizon time.Time, buckets JournalBuckets) (bool, error) {
	moved := false
	for {
		t, err := s.journalTotalsWithin(ctx, horizon, buckets, JournalCheckpointSpan)
		if err != nil {
			return moved, err
		}
		ok, err := s.SaveJournalCheckpoint(ctx, t, time.Now())
		if err != nil || !ok {
			return moved, err
		}
		moved = true
		if !t.more {
			return true, nil
		}
	}
}

func lastPassMicros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return base.ToMicros(t)
}

// plus is t and then u, the totals of the records after t's: its From is
// t's, its UpTo u's.
func (t JournalTotals) plus(u JournalTotals) JournalTotals {
	out := JournalTotals{From: t.From, UpTo: max(t.UpTo, u.UpTo), Buckets: t.Buckets, Unreadable: t.Unreadable + u.Unreadable,
		Sweeps: t.Sweeps.plus(u.Sweeps), LastPass: t.LastPass, more: u.more}
	if u.LastPass.After(out.LastPass) {
		out.LastPass = u.LastPass
	}
	out.Deletions = mergeByTree(t.Deletions, u.Deletions, func(d DeletionTotal) treeName { return treeName{d.Project, d.Area} },
		func(a, b DeletionTotal) DeletionTotal {
			a.Swept, a.SweptBytes, a.Failed = a.Swept+b.Swept, a.SweptBytes+b.SweptBytes, a.Failed+b.Failed
			return a
		})
	out.Walks = mergeByTree(t.Walks, u.Walks, func(w WalkTotal) treeName { return treeName{w.Project, w.Area} },
		func(a, b WalkTotal) WalkTotal {
			a.Histogram = a.Histogram.plus(b.Histogram)
			return a
		})
	return out
}

func (h Histogram) plus(o Histogram) Histogram {
	out := Histogram{Count: h.Count + o.Count, Sum: h.Sum + o.Sum, AtMost: slices.Clone(h.AtMost)}
	if out.AtMost == nil {
		out.AtMost = slices.Clone(o.AtMost)
		return out
	}
	for i := range min(len(out.AtMost), len(o.AtMost)) {
		out.AtMost[i] += o.AtMost[i]
	}
	return out
}

type treeName struct{ project, area string }

// mergeByTree is a and b with the entries of one tree added, in project
// and area order.
func mergeByTree[T any](a, b []T, key func(T) treeName, add func(T, T) T) []T {
	at := make(map[treeName]int, len(a)+len(b))
	out := make([]T, 0, len(a)+len(b))
	for _, x := range slices.Concat(a, b) {
		if i, ok := at[key(x)]; ok {
			out[i] = add(out[i], x)
			continue
		}
		at[key(x)] = len(out)
		out = append(out, x)
	}
	slices.SortFunc(out, func(x, y T) int {
		kx, ky := key(x), key(y)
		return cmp.Or(cmp.Compare(kx.project, ky.project), cmp.Compare(kx.area, ky.area))
	})
	if len(out) == 0 {
		return nil
	}
	return out
}
