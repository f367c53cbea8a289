package daemon

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// Run moves the host's journal checkpoint at once, past the records older
// than the settle time, and returns when cancelled.
func TestJournalCheckpointsRun(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		st := sandbox.TestStore(r.Manager)
		if err := st.InTx(r.Ctx, func(tx *store.Tx) error {
			return tx.AppendEvent(r.Ctx, "", "test", journal.Swept{SweepID: "s", DurationSeconds: 2})
		}); err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open(r.Driver, r.DSN)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.ExecContext(r.Ctx, `UPDATE events SET at = at - 600000000`); err != nil { // ten minutes older
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(r.Ctx)
		done := make(chan struct{})
		go func() { defer close(done); (&JournalCheckpoints{Root: r.Root, Every: time.Hour}).Run(ctx) }()
		var upTo, sweep int64
		for deadline := time.Now().Add(30 * time.Second); upTo == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if err := db.QueryRowContext(r.Ctx, `SELECT COALESCE(MAX(up_to), 0) FROM journal_checkpoints`).Scan(&upTo); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
		<-done
		if err := db.QueryRowContext(r.Ctx, `SELECT MAX(id) FROM events WHERE type = 'storage.swept'`).Scan(&sweep); err != nil {
			t.Fatal(err)
		}
		if upTo < sweep {
			t.Fatalf("checkpoint up to record %d, want past the sweep's, %d", upTo, sweep)
		}
	})
}
