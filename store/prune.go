package store

import (
	"context"
	"time"

	"github.com/xfsq/xfsq/journal"
)

// PruneBatch is how many records one transaction of PruneEvents removes:
// small enough that a writer waiting behind it (SQLite's one write lock)
// waits milliseconds.
const PruneBatch = 500

// pruneBatchQuery picks the next batch: this host's oldest records from
// before the cut-off, but a pending deletion's record, which stays until
// its deletion is settled (the settled record is a later one). The
// (host, id) index reads them oldest first and stops at the batch.
const pruneBatchQuery = `SELECT e.id FROM events e WHERE e.host = ? AND e.at < ?
	AND NOT EXISTS (SELECT 1 FROM evictions_pending p WHERE p.host = e.host AND p.event_id = e.id)
	ORDER BY e.id LIMIT ?`

// PruneEvents removes this host's journal records older than before, in
// transactions of batch records (0: PruneBatch), each on its own, so that
// writers never wait for the whole prune; it never removes a pending
// deletion's record nor one from the cut-off or after. It then
// journals one journal.pruned record of the run, retention being the
// setting's text.
func (s *Store) PruneEvents(ctx context.Context, before time.Time, retention, actor string, batch int) (journal.JournalPruned, error) {
	if batch <= 0 {
		batch = PruneBatch
	}
	run := journal.JournalPruned{Before: before.UTC(), Retention: retention}
	cut := toMicros(before)
	for {
		var n int64
		err := s.InTx(ctx, func(tx *Tx) error {
			res, err := tx.exec(ctx, `DELETE FROM events WHERE id IN (`+pruneBatchQuery+`)`, s.Host, cut, batch)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		if err != nil {
			return run, err
		}
		run.Events += n
		run.Batches++
		if n < int64(batch) {
			break
		}
	}
	if err := s.get(ctx, &run.KeptPending, `SELECT COUNT(*) FROM evictions_pending p JOIN events e ON e.id = p.event_id
		WHERE p.host = ? AND e.at < ?`, s.Host, cut); err != nil {
		return run, err
	}
	return run, s.InTx(ctx, func(tx *Tx) error { return tx.AppendEvent(ctx, "", actor, run) })
}
