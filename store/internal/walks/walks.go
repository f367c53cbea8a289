package walks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path"
	"slices"
	"time"

	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store/internal/base"
)

// A snapshot pass's reads and writes, many trees at a time. A pass read
// each tree's writes in flight before walking it and stored its walk
// after, ~19 statements a tree (a transaction for each, the snapshot, the
// tree kept, the history, the baseline and the grace timers): 3,000 trees
// were 57,000 round trips to a shared PostgreSQL. BeginWalks and
// StoreWalks do the same for a batch of trees in a constant number of
// statements, whatever the batch's size.

// BeginWalks is BeginWalk for each of keys at once: one transaction
// reading every tree's writes in flight. A walk that begins after at
// (the batch's trees are walked one after another) takes at as its
// beginning: a write committed between the two is then kept in the
// ledger and seen by the walk too, an over-count until the next walk,
// never an under-count; the caller bounds how long a batch lasts.
func (s *Store) BeginWalks(ctx context.Context, keys []base.TreeKey, at time.Time) (map[base.TreeKey]Walk, error) {
	out := make(map[base.TreeKey]Walk, len(keys))
	for _, k := range keys {
		out[k] = WalkAt(at)
	}
	if len(keys) == 0 {
		return out, nil
	}
	var earliest []struct {
		Project string `db:"project"`
		Area    string `db:"area"`
		At      int64  `db:"at"`
	}
	var writing []struct {
		Project  string `db:"project"`
		Area     string `db:"area"`
		TempPath string `db:"temp_path"`
		Bytes    int64  `db:"bytes"`
		Ino      int64  `db:"temp_ino"`
	}
	err := s.InTx(ctx, func(tx *Tx) error {
		if err := tx.AdmissionLock(ctx); err != nil {
			return err
		}
		// The host's writes in flight are few, whatever its trees: read
		// them all rather than name thousands of trees.
		if err := tx.Sel(ctx, &earliest, `SELECT project, area, MIN(created_at) AS at FROM reservations WHERE host = ?
			AND bytes = 0 AND inodes = 0 AND temp_path = '' GROUP BY project, area`, s.Host); err != nil {
			return err
		}
		return tx.Sel(ctx, &writing, `SELECT project, area, temp_path, bytes, temp_ino FROM reservations WHERE host = ?
			AND temp_path <> '' AND bytes > 0 AND temp_ino <> 0`, s.Host)
	})
	if err != nil {
		return nil, err
	}
	for _, e := range earliest {
		k := base.TreeKey{Project: e.Project, Area: e.Area}
		w, ok := out[k]
		if t := base.FromMicros(e.At - 1); ok && t.Before(w.Settled) {
			w.Settled = t
			out[k] = w
		}
	}
	for _, r := range writing {
		k := base.TreeKey{Project: r.Project, Area: r.Area}
		w, ok := out[k]
		if !ok {
			continue
		}
		if w.Writing == nil {
			w.Writing = map[string]InProgress{}
		}
		w.Writing[path.Base(r.TempPath)] = InProgress{Ino: uint64(r.Ino), Room: uint64(r.Bytes)}
		out[k] = w
	}
	return out, nil
}

// WalkRecord is one walk of a snapshot pass to store: its snapshot, the
// full tree kept of it, and, on the fallback, the baseline it sets.
type WalkRecord struct {
	Snapshot Snapshot
	Tree     []byte
	// Baseline, when set, is the tree's new figure for admission
	// (SetBaseline's).
	Baseline *WalkBaseline
}

// WalkBaseline is SetBaseline's arguments.
type WalkBaseline struct {
	Usage quota.Usage
	Walk  Walk
	Seen  WalkSeen
}

// StoreWalks stores recs in one transaction, as AddSnapshot and
// SetBaseline would one by one, in a constant number of statements:
// snapshots older than retention are dropped for the batch's trees (from
// the batch's earliest walk), a tree's history is kept as keepHistory
// keeps it, and each baseline's grace timers start or stop.
func (s *Store) StoreWalks(ctx context.Context, recs []WalkRecord, retention time.Duration) error {
	if len(recs) == 0 {
		return nil
	}
	return s.InTx(ctx, func(tx *Tx) error {
		if err := tx.addSnapshots(ctx, recs, retention); err != nil {
			return err
		}
		if err := tx.keepHistories(ctx, recs); err != nil {
			return err
		}
		return tx.SetBaselines(ctx, recs)
	})
}

func (t *Tx) addSnapshots(ctx context.Context, recs []WalkRecord, retention time.Duration) error {
	args := make([]any, 0, 12*len(recs))
	earliest := recs[0].Snapshot.At
	keys := make([]base.TreeKey, 0, len(recs))
	for _, r := range recs {
		s := r.Snapshot
		args = append(args, t.s.Host, s.Project, s.Area, base.ToMicros(s.At), int64(s.SizeBytes), int64(s.ApparentBytes),
			int64(s.Files), int64(s.Dirs), base.ToMicros(s.Mtime), s.Partial, int64(s.Errors), s.KernelBytes)
		if s.At.Before(earliest) {
			earliest = s.At
		}
		keys = append(keys, base.TreeKey{Project: s.Project, Area: s.Area})
	}
	if _, err := t.Exec(ctx, `INSERT INTO snapshots (host, project, area, at, size_bytes, apparent_bytes, files, dirs, mtime, partial, errors, kernel_bytes)
		VALUES `+base.Placeholders(len(recs), "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"), args...); err != nil {
		return err
	}
	args = args[:0]
	q := base.TreesCTE(keys, &args) + `DELETE FROM snapshots WHERE host = ? AND at < ?
		AND EXISTS (SELECT 1 FROM v WHERE v.project = snapshots.project AND v.area = snapshots.area)`
	if _, err := t.Exec(ctx, q, append(args, t.s.Host, base.ToMicros(earliest.Add(-retention)))...); err != nil {
		return err
	}
	args = args[:0]
	for _, r := range recs {
		args = append(args, t.s.Host, r.Snapshot.Project, r.Snapshot.Area, base.ToMicros(r.Snapshot.At), r.Tree)
	}
	_, err := t.Exec(ctx, `INSERT INTO snapshot_trees (host, project, area, at, tree) VALUES `+base.Placeholders(len(recs), "(?, ?, ?, ?, ?)")+`
		ON CONFLICT (host, project, area) DO UPDATE SET at = excluded.at, tree = excluded.tree`, args...)
	return err
}

// keepHistories is keepHistory for a batch: one read of the newest tree
// kept of each, one insert of those to keep, one delete of those past
// HistoryRetention.
func (t *Tx) keepHistories(ctx context.Context, recs []WalkRecord) error {
	var complete []base.TreeKey
	for _, r := range recs {
		if !r.Snapshot.Partial && len(r.Tree) > 0 {
			complete = append(complete, base.TreeKey{Project: r.Snapshot.Project, Area: r.Snapshot.Area})
		}
	}
	if len(complete) == 0 {
		return nil
	}
	var args []any
	// Driven from the batch's trees: one backward step of the primary key
	// a tree for its newest row, then that row. Driven from the history
	// (joined to v, the newest asked of each row), PostgreSQL scanned the
	// host's whole history, its trees' blobs included, for every batch:
	// ~0.75 s a batch, 90 of a ten-host pass's 100 s of database time.
	q := base.TreesCTE(complete, &args) + `, newest AS (SELECT v.project, v.area,
			(SELECT MAX(x.at) FROM snapshot_history x WHERE x.host = ? AND x.project = v.project AND x.area = v.area) AS at FROM v)
		SELECT h.project, h.area, h.at, h.digest FROM newest n JOIN snapshot_history h
			ON h.host = ? AND h.project = n.project AND h.area = n.area AND h.at = n.at`
	var lasts []struct {
		Project string `db:"project"`
		Area    string `db:"area"`
		At      int64  `db:"at"`
		Digest  string `db:"digest"`
	}
	if err := t.Sel(ctx, &lasts, q, append(args, t.s.Host, t.s.Host)...); err != nil {
		return err
	}
	type kept struct {
		at     int64
		digest string
	}
	last := make(map[base.TreeKey]kept, len(lasts))
	for _, l := range lasts {
		last[base.TreeKey{Project: l.Project, Area: l.Area}] = kept{l.At, l.Digest}
	}
	args = args[:0]
	var keep []base.TreeKey
	earliest := time.Time{}
	for _, r := range recs {
		s := r.Snapshot
		if s.Partial || len(r.Tree) == 0 {
			continue
		}
		k := base.TreeKey{Project: s.Project, Area: s.Area}
		sum := sha256.Sum256(r.Tree)
		digest := hex.EncodeToString(sum[:])
		if l, ok := last[k]; ok && (l.digest == digest || base.ToMicros(s.At)-l.at < HistoryEvery.Microseconds()) {
			continue
		}
		keep = append(keep, k)
		args = append(args, t.s.Host, s.Project, s.Area, base.ToMicros(s.At), digest, r.Tree)
		if earliest.IsZero() || s.At.Before(earliest) {
			earliest = s.At
		}
	}
	if len(keep) == 0 {
		return nil
	}
	if _, err := t.Exec(ctx, `INSERT INTO snapshot_history (host, project, area, at, digest, tree) VALUES `+base.Placeholders(len(keep), "(?, ?, ?, ?, ?, ?)")+`
		ON CONFLICT (host, project, area, at) DO NOTHING`, args...); err != nil {
		return err
	}
	args = args[:0]
	// Driven from the batch's trees, as the read above: each tree's newest
	// row at the cutoff once, then its older rows by the primary key (the
	// newest asked of every history row took three times as long).
	q = base.TreesCTE(keep, &args) + `, cut AS (SELECT v.project, v.area,
			(SELECT MAX(x.at) FROM snapshot_history x WHERE x.host = ? AND x.project = v.project AND x.area = v.area AND x.at <= ?) AS at FROM v)
		DELETE FROM snapshot_history WHERE (host, project, area, at) IN (SELECT h.host, h.project, h.area, h.at FROM cut JOIN snapshot_history h
			ON h.host = ? AND h.project = cut.project AND h.area = cut.area AND h.at < cut.at)`
	_, err := t.Exec(ctx, q, append(args, t.s.Host, base.ToMicros(earliest.Add(-HistoryRetention)), t.s.Host)...)
	return err
}

// SetBaselines is SetBaseline for a batch (the records' Baseline; those
// without one are left out): the walked figures (a floor where the walk
// may have missed something), the ledger rows they saw, the ledger's sums
// and the grace timers, each one statement for the whole batch.
func (t *Tx) SetBaselines(ctx context.Context, recs []WalkRecord) error {
	b := t.s.BaselinesOf(recs)
	if b == nil {
		return nil
	}
	if err := t.AdmissionLock(ctx); err != nil {
		return err
	}
	if _, err := t.Exec(ctx, b.With+` DELETE FROM ledger WHERE `+b.Seen, b.Args(b.SeenArgs)...); err != nil {
		return err
	}
	_, err := t.Exec(ctx, b.With+`, `+b.Sums+` `+b.Update, b.Args(b.SumsArgs, b.UpdateArgs)...)
	return err
}

// Baselines are SetBaselines' SQL for one batch, in parts that a statement
// of its own (MakeReady's) can put together: with names the walks
// w(project, area, bytes, inodes, at, settled, floor, hidden); seen
// selects the ledger rows their walks counted (deleted); sums
// is a CTE n of each tree's new figures, its ledger's sums over the rows
// not seen; update sets each tree's row from n.
type Baselines struct {
	With, Seen, Sums, Update              string
	walks, SeenArgs, SumsArgs, UpdateArgs []any
}

// args are the walks' arguments, then each of parts'.
func (b *Baselines) Args(parts ...[]any) []any {
	out := slices.Clone(b.walks)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// BaselinesOf is the SQL of recs' baselines, nil when none has one.
func (s *Store) BaselinesOf(recs []WalkRecord) *Baselines {
	var plain []WalkRecord
	for _, r := range recs {
		if r.Baseline != nil {
			plain = append(plain, r)
		}
	}
	if len(plain) == 0 {
		return nil
	}
	// As SetBaseline: the walk ran from its At to now; the ledger rows up
	// to its Settled are in its figure, and the removals recorded by now.
	end := base.ToMicros(time.Now())
	b := &Baselines{walks: make([]any, 0, 8*len(plain))}
	bit := func(v bool) int64 {
		if v {
			return 1
		}
		return 0
	}
	for _, r := range plain {
		bl := r.Baseline
		settled := base.ToMicros(bl.Walk.Settled)
		if bl.Walk.Settled.After(bl.Walk.At) {
			settled = base.ToMicros(bl.Walk.At)
		}
		b.walks = append(b.walks, r.Snapshot.Project, r.Snapshot.Area, int64(bl.Usage.Bytes), int64(bl.Usage.Inodes), base.ToMicros(bl.Walk.At), settled,
			bit(bl.Seen.Unsettled || bl.Seen.Hidden), bit(bl.Seen.Hidden))
	}
	b.With = `WITH w (project, area, bytes, inodes, at, settled, floor, hidden) AS (VALUES ` +
		base.Placeholders(len(plain), "(CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT))") + `)`
	// A ledger row (of l) its tree's walk (of w) counted.
	seen := func(l string) string {
		return `(` + l + `.at <= w.settled OR ((` + l + `.bytes < 0 OR ` + l + `.inodes < 0) AND ` + l + `.at <= ?))`
	}
	b.Seen = `host = ? AND EXISTS (SELECT 1 FROM w WHERE w.project = ledger.project AND w.area = ledger.area AND ` + seen("ledger") + `)`
	b.SeenArgs = []any{s.Host, end}
	// One update of each tree's row, whose every change moves its
	// project's version (a trigger a row): the walked figures, the
	// ledger's sums anew from the rows kept, and the grace timers from
	// both. A walk that may have missed something (WalkSeen) is a floor,
	// as SetBaseline takes it: its figure only where it raises what the
	// tree counted (its last walk and the ledger since), never to lower
	// it. A tree over a soft limit by what is committed (walked + ledger)
	// keeps its running timer or starts one now; one back under stops it.
	// The sums leave out the rows seen, deleted or not yet: in one
	// statement with the deletion they read the rows as before it.
	b.Sums = `n AS (SELECT t.project, t.area, w.at, w.hidden,
			CASE WHEN w.floor = 1 AND t.walked_bytes + t.ledger_bytes > w.bytes THEN t.walked_bytes + t.ledger_bytes ELSE w.bytes END AS wb,
			CASE WHEN w.floor = 1 AND t.walked_inodes + t.ledger_inodes > w.inodes THEN t.walked_inodes + t.ledger_inodes ELSE w.inodes END AS wi,
			COALESCE((SELECT SUM(l.bytes) FROM ledger l WHERE l.host = t.host AND l.project = t.project AND l.area = t.area AND NOT ` + seen("l") + `), 0) AS lb,
			COALESCE((SELECT SUM(l.inodes) FROM ledger l WHERE l.host = t.host AND l.project = t.project AND l.area = t.area AND NOT ` + seen("l") + `), 0) AS li
		FROM trees t JOIN w ON t.project = w.project AND t.area = w.area WHERE t.host = ?)`
	b.SumsArgs = []any{end, end, s.Host}
	b.Update = `UPDATE trees SET walked_bytes = n.wb, walked_inodes = n.wi, walked_at = n.at, walked_end = ?, walked_hidden = (n.hidden = 1),
		ledger_bytes = n.lb, ledger_inodes = n.li,
		bytes_soft_since = CASE WHEN trees.bytes_soft = 0 OR n.wb + n.lb <= trees.bytes_soft THEN 0
			WHEN trees.bytes_soft_since = 0 THEN CAST(? AS BIGINT) ELSE trees.bytes_soft_since END,
		inodes_soft_since = CASE WHEN trees.inodes_soft = 0 OR n.wi + n.li <= trees.inodes_soft THEN 0
			WHEN trees.inodes_soft_since = 0 THEN CAST(? AS BIGINT) ELSE trees.inodes_soft_since END
		FROM n WHERE trees.host = ? AND trees.project = n.project AND trees.area = n.area`
	b.UpdateArgs = []any{end, end, end, s.Host}
	return b
}
