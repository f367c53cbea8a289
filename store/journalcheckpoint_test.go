package store

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/store/internal/eventlog"
)

// A journal checkpoint moves forward only, once from each position: of two
// writers that summed from the same checkpoint, one writes; a checkpoint
// in other buckets is not used, and is replaced by one summed from the
// start; and totals from a checkpoint are those summed from the start.
func TestJournalCheckpointMovesForwardOnce(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		buckets := JournalBuckets{Walks: []float64{0.1, 1}, Sweeps: []float64{1, 10}}
		secs := func(v float64) *float64 { return &v }
		journalAged := func() {
			t.Helper()
			if err := s.InTx(ctx, func(tx *Tx) error {
				for _, p := range []journal.Payload{
					journal.Evicted{SweepID: "s", Area: "cache", Path: "x", State: journal.StateDone, Bytes: 10},
					journal.Swept{SweepID: "s", DurationSeconds: 2},
					journal.Snapshot{Trees: []journal.SnapshotTree{{Project: "omni", Area: "cache", DurationSeconds: secs(0.5)}}},
				} {
					if err := tx.AppendEvent(ctx, "omni", "op", p); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.SQL.Exec(s.SQL.Rebind(`UPDATE events SET at = at - ?`), time.Hour.Microseconds()); err != nil {
				t.Fatal(err)
			}
		}
		totals := func(b JournalBuckets) JournalTotals {
			t.Helper()
			out, err := s.JournalTotals(ctx, time.Now().Add(-5*time.Minute), b)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		save := func(tt JournalTotals, want bool) {
			t.Helper()
			if ok, err := s.SaveJournalCheckpoint(ctx, tt, time.Now()); err != nil || ok != want {
				t.Fatalf("save from %d to %d: %v %v, want %v", tt.From, tt.UpTo, ok, err, want)
			}
		}

		journalAged()
		first := totals(buckets)
		save(first, true)
		save(first, false) // summed from no checkpoint, and there is one now
		journalAged()
		a, b := totals(buckets), totals(buckets)
		if a.From != first.UpTo || a.UpTo <= a.From || a.Sweeps.Count != 2 {
			t.Fatalf("totals from the checkpoint %+v, want from %d, two sweeps", a, first.UpTo)
		}
		save(a, true)
		save(b, false) // the checkpoint moved past where b began: b's records would count twice

		other := JournalBuckets{Walks: []float64{5}, Sweeps: []float64{5}}
		if _, ok, err := s.JournalCheckpoint(ctx, other); ok || err != nil {
			t.Fatalf("a checkpoint in other buckets was used (%v)", err)
		}
		fromStart := totals(other)
		if fromStart.From != 0 || fromStart.Sweeps.Count != 2 {
			t.Fatalf("in other buckets: %+v, want summed from the start", fromStart)
		}
		save(fromStart, true) // a binary counting in other buckets takes over
		if _, ok, _ := s.JournalCheckpoint(ctx, buckets); ok {
			t.Error("the checkpoint in the first buckets outlived one in others")
		}
		again := totals(buckets) // from the start, in the first buckets
		a.From = 0
		if !reflect.DeepEqual(a, again) {
			t.Errorf("from the checkpoint %+v, from the start %+v", a, again)
		}

		// Advanced a record ID at a time, as a long journal is in steps:
		// the same totals.
		defer func(span int64) { eventlog.JournalCheckpointSpan = span }(eventlog.JournalCheckpointSpan)
		eventlog.JournalCheckpointSpan = 1
		if moved, err := s.AdvanceJournalCheckpoint(ctx, time.Now().Add(-5*time.Minute), buckets); err != nil || !moved {
			t.Fatalf("advance: %v %v", moved, err)
		}
		stepped, ok, err := s.JournalCheckpoint(ctx, buckets)
		if stepped.From = 0; err != nil || !ok || !reflect.DeepEqual(stepped, again) {
			t.Errorf("stepped %+v (%v %v), summed at once %+v", stepped, ok, err, again)
		}
	})
}

// A prune removes no record a follower counts that the journal checkpoint
// does not hold: here a record older than the cut journalled after one
// newer than it (times out of ID order), which the checkpoint cannot hold
// yet; the totals after the prune are those before it.
func TestPruneKeepsWhatTheCheckpointDoesNotHold(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		buckets := JournalBuckets{Walks: []float64{1}, Sweeps: []float64{1}}
		var ids []int64
		for i := range 3 {
			if err := s.InTx(ctx, func(tx *Tx) error {
				return tx.AppendEvent(ctx, "omni", "op", journal.Evicted{SweepID: "s", Area: "cache", Path: fmt.Sprint(i), State: journal.StateDone, Bytes: 10})
			}); err != nil {
				t.Fatal(err)
			}
			var id int64
			if err := s.Get(ctx, &id, `SELECT MAX(id) FROM events`); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
			age := 48 * time.Hour // the second is recent: the third, old, comes after it
			if i == 1 {
				age = 0
			}
			if _, err := s.SQL.Exec(s.SQL.Rebind(`UPDATE events SET at = ? WHERE id = ?`), time.Now().Add(-age).UnixMicro(), id); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				if moved, err := s.AdvanceJournalCheckpoint(ctx, time.Now().Add(-5*time.Minute), buckets); err != nil || !moved {
					t.Fatalf("checkpoint: %v %v", moved, err)
				}
			}
		}
		all := time.Now().Add(time.Hour) // a horizon past every record: the totals a later restart sums
		before, err := s.JournalTotals(ctx, all, buckets)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.PruneEvents(ctx, time.Now().Add(-time.Hour), "1h", "op", 0); err != nil {
			t.Fatal(err)
		}
		after, err := s.JournalTotals(ctx, all, buckets)
		if err != nil || !reflect.DeepEqual(after.Deletions, before.Deletions) {
			t.Errorf("deletions after the prune %+v (%v), before %+v", after.Deletions, err, before.Deletions)
		}
		var left []int64
		if err := s.Sel(ctx, &left, `SELECT id FROM events WHERE type = ? ORDER BY id`, string(journal.TypeEvicted)); err != nil {
			t.Fatal(err)
		}
		if want := ids[1:]; !reflect.DeepEqual(left, want) {
			t.Errorf("records left %v, want %v: the first (in the checkpoint) pruned, the third (not) kept", left, want)
		}
	})
}
