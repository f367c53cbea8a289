package store

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/store/internal/eventlog"
)

// A binary one schema version older keeps working on a newer schema that
// says it is compatible with it, and refuses one that is not, naming both
// versions and the fix: the newer version here is a fake row, as a newer
// release would write it.
func TestOlderBinaryOnNewerSchema(t *testing.T) {
	for _, c := range []struct {
		name   string
		oldest int // the fake migration's oldest compatible binary; 0: no row
		works  bool
	}{
		{"an expansion", SchemaVersion(), true},
		{"a contraction", SchemaVersion() + 1, false},
		{"no word on compatibility", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			storetest.ForEach(t, func(t *testing.T, dsn string) {
				s := open(t, dsn)
				newer := SchemaVersion() + 1
				if _, err := s.SQL.Exec(s.SQL.Rebind(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)`), newer); err != nil {
					t.Fatal(err)
				}
				if c.oldest > 0 {
					if _, err := s.SQL.Exec(s.SQL.Rebind(`INSERT INTO schema_compat (version, oldest_binary) VALUES (?, ?)`), newer, c.oldest); err != nil {
						t.Fatal(err)
					}
				}
				o, err := Open(ctx, dsn, "host-a")
				if !c.works {
					var tooNew *SchemaTooNewError
					if err == nil {
						o.Close()
						t.Fatal("opened a schema this binary cannot work with")
					}
					if msg := err.Error(); !strings.Contains(msg, fmt.Sprint(newer)) || !strings.Contains(msg, fmt.Sprint(SchemaVersion())) {
						t.Errorf("%q: want both versions named", msg)
					}
					if errors.As(err, &tooNew) && !strings.Contains(tooNew.Hint(), "upgrade xfsq") {
						t.Errorf("hint %q", tooNew.Hint())
					}
					return
				}
				if err != nil {
					t.Fatalf("a compatible newer schema: %v", err)
				}
				defer o.Close()
				// It works: a write and a read, and no migration of its own.
				if err := o.InTx(ctx, func(tx *Tx) error {
					return tx.AppendEvent(ctx, "omni", "op", journal.SettingChanged{Key: "k"})
				}); err != nil {
					t.Fatal(err)
				}
				if ev, err := o.Events(ctx, EventFilter{}); err != nil || len(ev) != 1 {
					t.Fatalf("events %v %v", ev, err)
				}
				var n int
				if err := o.Get(ctx, &n, `SELECT MAX(version) FROM schema_migrations`); err != nil || n != newer {
					t.Errorf("schema at %d (%v), want %d untouched", n, err, newer)
				}
			})
		})
	}
}

// The hot journal queries of a host never scan the whole events table on
// PostgreSQL: Blank (every command's start), the events listing, a
// scrape's read and its catch-up from a checkpoint, settling pending
// deletions and pruning each read this host's records through an index,
// with a journal of 20,000 other hosts' records beside this host's 50, as
// a fleet's is.
func TestJournalQueriesUseTheHostIndex(t *testing.T) {
	s := open(t, storetest.Postgres(t))
	if err := s.InTx(ctx, func(tx *Tx) error {
		for i := range 50 {
			if err := tx.AppendEvent(ctx, "omni", "op", journal.Evicted{Path: fmt.Sprintf("p%d", i), State: journal.StatePending, SweepID: "s"}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SQL.Exec(`INSERT INTO events (at, type, host, project, actor, payload)
		SELECT g, 'storage.evicted', 'host-' || (g % 9), 'omni', 'op', '{}' FROM generate_series(1, 20000) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SQL.Exec(`ANALYZE events`); err != nil {
		t.Fatal(err)
	}
	types := []string{string(journal.TypeEvicted), string(journal.TypeSwept)}
	since := time.Now().Add(-time.Hour).UnixMicro()
	// Each reads events through the index named: the host's range of
	// (host, id), or the primary key for a pending record's own row. An
	// index read of every host's events (the primary key in id order)
	// would cost what a sequential scan does.
	for _, q := range []struct {
		name, query string
		args        []any
		index       string
	}{
		{"Blank", `SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM projects WHERE host = $1 LIMIT 1) p) +
		(SELECT COUNT(*) FROM (SELECT 1 FROM events WHERE host = $1 LIMIT 1) e)`, []any{s.Host}, "events_host_id"},
		{"events", `SELECT id FROM events WHERE host = $1 ORDER BY id DESC LIMIT 100`, []any{s.Host}, "events_host_id"},
		{"events of a type since", `SELECT id FROM events WHERE host = $1 AND type = $2 AND at >= $3 AND id < $4 ORDER BY id DESC LIMIT 100`,
			[]any{s.Host, types[0], since, 1 << 40}, "events_"},
		{"scrape", `SELECT id FROM events WHERE id > $1 AND host = $2 AND type IN ($3, $4) ORDER BY id LIMIT 1000`, []any{0, s.Host, types[0], types[1]}, "events_host_id"},
		{"pending", `SELECT e.id FROM evictions_pending p JOIN events e ON e.id = p.event_id WHERE p.host = $1 ORDER BY e.id`, []any{s.Host}, "events_"},
		{"prune", s.SQL.Rebind(eventlog.PruneBatchQuery), []any{s.Host, since, s.Host, 500}, "events_host_id"},
		{"catch-up after a checkpoint", `SELECT MIN(id) FROM events WHERE host = $1 AND id > $2 AND ` + eventlog.TotalledIn + ` AND at >= $3`,
			[]any{s.Host, 40, since}, "events_"}, // or (type, at): the records since the horizon are few
		{"sums after a checkpoint", `SELECT payload FROM events WHERE host = $1 AND type = $2 AND id > $3 AND id <= $4`,
			[]any{s.Host, types[0], 40, 50}, "events_host_id"},
	} {
		t.Run(q.name, func(t *testing.T) {
			plan := explain(t, s, q.query, q.args...)
			through := strings.Contains(plan, "using "+q.index) || strings.Contains(plan, "Scan on "+q.index)
			if strings.Contains(plan, "Seq Scan on events") || !through {
				t.Errorf("plan does not read events through %s:\n%s", q.index, plan)
			}
		})
	}
}

// explain is query's plan.
func explain(t *testing.T, s *Store, query string, args ...any) string {
	t.Helper()
	rows, err := s.SQL.Query(`EXPLAIN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var l string
		rows.Scan(&l)
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

// Pruning under concurrent writers and settlers loses no pending record
// and no record inside the window, removes every other old one, and
// journals one journal.pruned record of the run with its counts.
func TestPruneKeepsPendingAndTheWindow(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		other := open(t, dsn)
		other.Host = "host-b" // another host's old records are its own to prune
		const old = 700
		var pending int64
		if err := s.InTx(ctx, func(tx *Tx) error {
			for i := range old {
				var p journal.Payload = journal.SettingChanged{Key: "k"}
				if i%17 == 0 {
					pending++
					p = journal.Evicted{Path: fmt.Sprintf("old/%d", i), State: journal.StatePending, SweepID: "old"}
				}
				if err := tx.AppendEvent(ctx, "omni", "op", p); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := other.InTx(ctx, func(tx *Tx) error { return tx.AppendEvent(ctx, "x", "op", journal.SettingChanged{Key: "k"}) }); err != nil {
			t.Fatal(err)
		}
		aged := time.Now().Add(-48 * time.Hour).UnixMicro()
		if _, err := s.SQL.Exec(s.SQL.Rebind(`UPDATE events SET at = ?`), aged); err != nil {
			t.Fatal(err)
		}
		cut := time.Now().Add(-time.Hour)
		var stop atomic.Bool
		var wg sync.WaitGroup
		var written atomic.Int64
		for w := range 2 { // writers inside the window: new records, new pending deletions, settled ones
			wg.Go(func() {
				for i := 0; !stop.Load(); i++ {
					err := s.InTx(ctx, func(tx *Tx) error {
						return tx.AppendEvent(ctx, "omni", "op", journal.Evicted{Path: fmt.Sprintf("new/%d/%d", w, i), State: journal.StatePending, SweepID: "new"})
					})
					if err != nil {
						t.Error(err)
						return
					}
					written.Add(1)
				}
			})
		}
		run, err := s.PruneEvents(ctx, cut, "1h", "xfsq", 50)
		stop.Store(true)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if run.Events != old-pending || run.KeptPending != pending || int64(run.Batches) < (old-pending)/50 {
			t.Errorf("run %+v: want %d pruned in batches of 50, %d pending kept", run, old-pending, pending)
		}
		var left, inWindow, orphans, b int64
		s.Get(ctx, &left, `SELECT COUNT(*) FROM events WHERE host = ? AND at < ?`, s.Host, toMicros(cut))
		s.Get(ctx, &inWindow, `SELECT COUNT(*) FROM events WHERE host = ? AND at >= ? AND type = ?`, s.Host, toMicros(cut), string(journal.TypeEvicted))
		s.Get(ctx, &orphans, `SELECT COUNT(*) FROM evictions_pending p WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.id = p.event_id)`)
		s.Get(ctx, &b, `SELECT COUNT(*) FROM events WHERE host = 'host-b'`)
		if left != pending || inWindow != written.Load() || orphans != 0 || b != 1 {
			t.Errorf("after pruning: %d old left (want the %d pending), %d of %d written inside the window, %d pending rows without their record, %d of host-b's 1",
				left, pending, inWindow, written.Load(), orphans, b)
		}
		evs, err := s.Events(ctx, EventFilter{Type: journal.TypeJournalPruned})
		if err != nil || len(evs) != 1 {
			t.Fatalf("journal.pruned records: %v %v", evs, err)
		}
		if p, err := evs[0].Decode(); err != nil || p.(journal.JournalPruned).Events != run.Events {
			t.Errorf("journalled %+v (%v), ran %+v", p, err, run)
		}
	})
}
