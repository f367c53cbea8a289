package walks

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store/internal/base"
)

// CrossingKey names one limit of one tree.
type CrossingKey struct {
	base.TreeKey
	Limit string // journal.LimitBytesSoft, …
}

// Crossing is one limit of one tree as an observer sees it now: over it
// (at or over a hard limit, past a soft one) or not, with the record to
// journal if this observer is the first to see it change.
type Crossing struct {
	CrossingKey
	Over     bool
	Exceeded journal.QuotaExceeded // journalled when Over
	OK       journal.QuotaOK       // journalled when not
}

// RecordCrossings records, in one transaction, each crossing whose state
// differs from the one last recorded for its limit, and journals its
// record; a limit never recorded is under it. The state is changed only
// from the one the observer read (compare and set), so that of two
// observers — processes, hosts sharing the store — seeing the same change,
// one journals it. It returns the crossings it journalled.
func (s *Store) RecordCrossings(ctx context.Context, actor string, cs []Crossing) ([]Crossing, error) {
	var out []Crossing
	err := s.InTx(ctx, func(tx *Tx) error {
		out = out[:0]
		for _, c := range cs {
			done, err := tx.RecordCrossing(ctx, actor, c)
			if err != nil {
				return err
			}
			if done {
				out = append(out, c)
			}
		}
		return nil
	})
	return out, err
}

// RecordCrossing flips c's limit to c.Over unless it is already there,
// and journals the change; done says it did.
func (t *Tx) RecordCrossing(ctx context.Context, actor string, c Crossing) (done bool, err error) {
	now := base.ToMicros(time.Now())
	if c.Over {
		res, err := t.Exec(ctx, `INSERT INTO limit_crossings (host, project, area, limit_name, over, since) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (host, project, area, limit_name) DO UPDATE SET over = excluded.over, since = excluded.since
			WHERE limit_crossings.over = ?`, t.s.Host, c.Project, c.Area, c.Limit, true, now, false)
		if err != nil {
			return false, err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return false, err
		}
		return true, t.AppendEvent(ctx, c.Project, actor, c.Exceeded)
	}
	var since int64
	err = t.Get(ctx, &since, `SELECT since FROM limit_crossings WHERE host = ? AND project = ? AND area = ? AND limit_name = ? AND over = ?`,
		t.s.Host, c.Project, c.Area, c.Limit, true)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil // not over: nothing to end
	}
	if err != nil {
		return false, err
	}
	res, err := t.Exec(ctx, `UPDATE limit_crossings SET over = ?, since = ? WHERE host = ? AND project = ? AND area = ? AND limit_name = ? AND over = ?`,
		false, now, t.s.Host, c.Project, c.Area, c.Limit, true)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	ok := c.OK
	if since > 0 {
		at := base.FromMicros(since).UTC()
		ok.ExceededAt = &at
	}
	return true, t.AppendEvent(ctx, c.Project, actor, ok)
}

// OverLimits reads which limits of one tree are recorded as over.
func (t *Tx) OverLimits(ctx context.Context, k base.TreeKey) (map[string]bool, error) {
	var names []string
	if err := t.Sel(ctx, &names, `SELECT limit_name FROM limit_crossings WHERE host = ? AND project = ? AND area = ? AND over = ?`,
		t.s.Host, k.Project, k.Area, true); err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out, nil
}

// CrossingStates reads every limit of this host's trees that is recorded
// as over: what observers compare what they see with.
func (s *Store) CrossingStates(ctx context.Context) (map[CrossingKey]bool, error) {
	var rows []struct {
		Project string `db:"project"`
		Area    string `db:"area"`
		Limit   string `db:"limit_name"`
	}
	if err := s.Sel(ctx, &rows, `SELECT project, area, limit_name FROM limit_crossings WHERE host = ? AND over = ?`, s.Host, true); err != nil {
		return nil, err
	}
	out := make(map[CrossingKey]bool, len(rows))
	for _, r := range rows {
		out[CrossingKey{base.TreeKey{Project: r.Project, Area: r.Area}, r.Limit}] = true
	}
	return out, nil
}

// GraceKey carries soft_grace to the store's own observers (WithGrace).
type GraceKey struct{}

// WithGrace tells the crossings a write's commit records (CommitWrite and
// the ledger's other changes) how long soft_grace is, so that a soft
// limit's record says when its grace ends: the setting is the library's.
func WithGrace(ctx context.Context, grace time.Duration) context.Context {
	return context.WithValue(ctx, GraceKey{}, grace)
}

// LimitsCrossings is what an observer that read a tree's usage u against
// its limits l sees of each limit, with the records to journal: over a
// soft limit is above it, over a hard one at or above it, or within
// fullWithin below (ext4 stops writes up to a page short). A soft limit's
// grace ends at its timer's start plus grace (zero: not known).
func LimitsCrossings(k base.TreeKey, l quota.Limits, u quota.Usage, fullWithin uint64, bytesGrace, inodesGrace time.Time, seenBy string) []Crossing {
	over := LimitsOver(l, u, fullWithin)
	figures := journal.QuotaExceeded{Area: k.Area, UsedBytes: u.Bytes, UsedInodes: &u.Inodes, BytesSoft: l.BytesSoft,
		InodesSoft: &l.InodesSoft, BytesHard: &l.BytesHard, InodesHard: &l.InodesHard, SeenBy: seenBy}
	out := make([]Crossing, 0, 4)
	for i, c := range []struct {
		limit uint64
		grace time.Time
	}{{l.BytesSoft, bytesGrace}, {l.BytesHard, time.Time{}}, {l.InodesSoft, inodesGrace}, {l.InodesHard, time.Time{}}} {
		name := journal.LimitNames[i]
		x := figures
		x.Limit, x.LimitValue = name, &c.limit
		if !c.grace.IsZero() {
			g := c.grace.UTC()
			x.GraceEndsAt = &g
		}
		out = append(out, Crossing{CrossingKey: CrossingKey{k, name}, Over: over[i], Exceeded: x,
			OK: journal.QuotaOK{Area: k.Area, Limit: name, UsedBytes: u.Bytes, UsedInodes: u.Inodes, LimitValue: c.limit, SeenBy: seenBy}})
	}
	return out
}

// LimitsOver says which limits, in journal.LimitNames' order, usage u is
// over (as LimitsCrossings counts it), without making the records: what
// an observer compares with what it knows before anything else.
func LimitsOver(l quota.Limits, u quota.Usage, fullWithin uint64) [4]bool {
	return [4]bool{
		l.BytesSoft > 0 && u.Bytes > l.BytesSoft,
		l.BytesHard > 0 && (u.Bytes >= l.BytesHard || l.BytesHard-u.Bytes < fullWithin),
		l.InodesSoft > 0 && u.Inodes > l.InodesSoft,
		l.InodesHard > 0 && u.Inodes >= l.InodesHard,
	}
}
