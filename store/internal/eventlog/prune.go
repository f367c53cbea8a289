package eventlog

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/store/internal/base"
)

// PruneBatch is how many records one transaction of PruneEvents removes:
// small enough that a writer waiting behind it (SQLite's one write lock)
// waits milliseconds.
const PruneBatch = 500

// PruneBatchQuery picks the next batch: this host's oldest records from
// before the cut-off, but a pending deletion's record, which stays until
// its deletion is settled (the settled record is a later one), and a
// record a follower counts that the host's journal checkpoint does not
// hold yet (with no checkpoint, the totals are those of what is left, as
// they were before there were checkpoints). The (host, id) index reads
// them oldest first and stops at the batch.
var PruneBatchQuery = `SELECT e.id FROM events e WHERE e.host = ? AND e.at < ?
	AND NOT EXISTS (SELECT 1 FROM evictions_pending p WHERE p.host = e.host AND p.event_id = e.id)
	AND (NOT (e.` + TotalledIn + `)
		OR e.id <= COALESCE((SELECT c.up_to FROM journal_checkpoints c WHERE c.host = ?), 9223372036854775807))
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
	if err := s.checkpointBefore(ctx, before); err != nil {
		return run, err
	}
	cut := base.ToMicros(before)
	for {
		var n int64
		err := s.InTx(ctx, func(tx *Tx) error {
			res, err := tx.Exec(ctx, `DELETE FROM events WHERE id IN (`+PruneBatchQuery+`)`, s.Host, cut, s.Host, batch)
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
	if err := s.Get(ctx, &run.KeptPending, `SELECT COUNT(*) FROM evictions_pending p JOIN events e ON e.id = p.event_id
		WHERE p.host = ? AND e.at < ?`, s.Host, cut); err != nil {
		return run, err
	}
	return run, s.InTx(ctx, func(tx *Tx) error { return tx.AppendEvent(ctx, "", actor, run) })
}

// checkpointBefore moves this host's journal checkpoint, when it has one,
// past the records older than before, in the checkpoint's own buckets:
// what the prune then removes, it holds. A writer that moved it meanwhile
// leaves it where that writer put it (the prune then keeps what it does
// not hold).
func (s *Store) checkpointBefore(ctx context.Context, before time.Time) error {
	var stored []string
	if err := s.Sel(ctx, &stored, `SELECT buckets FROM journal_checkpoints WHERE host = ?`, s.Host); err != nil || len(stored) == 0 {
		return err
	}
	var buckets JournalBuckets
	if err := json.Unmarshal([]byte(stored[0]), &buckets); err != nil {
		return fmt.Errorf("read the journal's checkpoint: %w", err)
	}
	if _, err := s.AdvanceJournalCheckpoint(ctx, before, buckets); err != nil {
		return fmt.Errorf("move the journal's checkpoint before pruning: %w", err)
	}
	return nil
}
