package metrics

import (
	"database/sql"
	"reflect"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// Records in the oldest forms xfsq journalled: a deletion's size as
// "bytes", a sweep's duration as "duration_ms".
type oldEvicted struct {
	SweepID string `json:"sweep_id,omitempty"`
	Area    string `json:"area"`
	Path    string `json:"path"`
	Bytes   uint64 `json:"bytes"`
	State   string `json:"state"`
}

func (oldEvicted) Type() journal.Type { return journal.TypeEvicted }

type oldSwept struct {
	SweepID    string `json:"sweep_id"`
	DurationMS int64  `json:"duration_ms"`
}

func (oldSwept) Type() journal.Type { return journal.TypeSwept }

// TestCatchUpCountsAsFollowing: a collector's first scrape sums the
// journal in the database (Store.JournalTotals), from the host's journal
// checkpoint when there is one, and follows it by cursor from there; its
// counters are those of a collector that reads every record one by one,
// on the same journal, before each seam and after it — nothing counted
// twice, nothing lost — across restarts from a checkpoint, and across a
// prune, which the checkpoint outlives. The journal holds every form the
// counters read: deletions done, partial, failed, pending, outside sweeps
// and in the oldest form; sweeps in both forms; walks of real passes and
// of a pass whose durations sit on and beside the buckets' bounds (and one
// never timed); records older than the catch-up's horizon and newer.
func TestCatchUpCountsAsFollowing(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		r.Add(10<<20, "a", "b")
		record := func(proj string, p journal.Payload) {
			t.Helper()
			if err := sandbox.TestStore(m).InTx(ctx, func(tx *store.Tx) error { return tx.AppendEvent(ctx, proj, "test", p) }); err != nil {
				t.Fatal(err)
			}
		}
		evict := func(proj, ar, sweep string, bytes uint64, state string) {
			rec := deletion.Record{SweepID: sweep, Area: ar, Path: proj + "/" + ar + "/x" + state, Bytes: bytes + 1, State: deletion.StatePending}
			if sweep == "" {
				rec.DeletionID = "d-" + state
			}
			record(proj, rec)
			if state != deletion.StatePending {
				rec.State, rec.Bytes = state, bytes
				record(proj, rec)
			}
		}
		secs := func(v float64) *float64 { return &v }
		timedPass := journal.Snapshot{Trees: []journal.SnapshotTree{
			{Project: "a", Area: area.Workspace, DurationSeconds: secs(0.01)}, // on a bound
			{Project: "a", Area: area.Workspace, DurationSeconds: secs(0.010000001)},
			{Project: "a", Area: area.Workspace, DurationSeconds: secs(0.30000000000000004)},
			{Project: "a", Area: area.Cache, DurationSeconds: secs(1e-9)},
			{Project: "a", Area: area.Cache, DurationSeconds: secs(299.99999999999994)},
			{Project: "a", Area: area.Cache, DurationSeconds: secs(4000.123456789)}, // above every bound
			{Project: "b", Area: area.Scratch, DurationSeconds: secs(0.123456789123)},
			{Project: "b", Area: area.Scratch}, // journalled before walks were timed
		}}
		journalSome := func(round int) {
			t.Helper()
			record("", journal.Swept{SweepID: "s", DurationSeconds: 2.5 + float64(round)/3}) // first: on the seam
			evict("a", area.Cache, "s", 1000, deletion.StateDone)
			evict("a", area.Cache, "s", 500, deletion.StatePartial)
			evict("a", area.Cache, "s", 7, deletion.StateFailed)
			evict("a", area.Workspace, "", 300, deletion.StateDone) // outside a sweep: not a sweep's bytes
			evict("a", area.Workspace, "", 0, deletion.StateFailed)
			evict("b", area.Scratch, "s", 1<<40, deletion.StateDone)
			evict("b", area.Scratch, "s", 9, deletion.StatePending)
			record("b", oldEvicted{SweepID: "s", Area: area.Scratch, Path: "b/old", Bytes: 4096, State: deletion.StateDone})
			record("", oldSwept{SweepID: "old", DurationMS: 1234})
			record("", timedPass)
			if _, err := m.Snapshot(ctx, sandbox.SnapshotOptions{Scheduled: true}); err != nil {
				t.Fatal(err)
			}
		}
		journalSome(0)
		journalSome(1)
		age(t, r, 10*time.Minute) // past the catch-up's horizon
		journalSome(2)            // within it: read one by one

		summed, onebyone := newCollector(r.Root, nil, nil), newCollector(r.Root, nil, nil)
		onebyone.cursor.Buckets = sandbox.JournalBuckets{}
		var newestPass time.Time // kept once its record is pruned, as the checkpoint keeps it
		lastPassJournalled := func() time.Time {
			t.Helper()
			passes, err := sandbox.TestStore(m).EventsAfter(ctx, 0, []journal.Type{journal.TypeSnapshot}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(passes) > 0 {
				newestPass = passes[len(passes)-1].At
			}
			return newestPass
		}
		check := func(when string, others ...*collector) {
			t.Helper()
			for _, c := range append([]*collector{summed, onebyone}, others...) {
				if err := c.readJournal(ctx); err != nil {
					t.Fatal(err)
				}
			}
			for i, c := range append([]*collector{summed}, others...) {
				sameCounters(t, when, c, onebyone, i > 0)
			}
			want := lastPassJournalled()
			for _, c := range others { // onebyone read the passes before age moved them
				if !c.lastPass.Equal(want) {
					t.Errorf("%s: last pass %v, want the newest journalled, %v", when, c.lastPass, want)
				}
			}
		}
		checkpoint := func() { // as the daemon does every few minutes
			t.Helper()
			if moved, err := CheckpointJournal(ctx, r.Root); err != nil || !moved {
				t.Fatalf("checkpoint: moved %v, %v", moved, err)
			}
		}
		check("first scrape")
		checkpoint() // after rounds 0 and 1: round 2 is too new
		journalSome(3)
		check("next scrape")
		age(t, r, 10*time.Minute)
		check("after the records aged") // the cursor's recent records settle, none counted again

		// Each figure as journalled, four times over: the catch-up neither
		// lost nor doubled a record at its seam.
		if got, want := summed.evicted[treeKey{"a", area.Cache}], 4*1500.0; got != want {
			t.Errorf("a/cache evicted %v, want %v", got, want)
		}
		if got, want := summed.evicted[treeKey{"b", area.Scratch}], 4*(1<<40+4096.0); got != want {
			t.Errorf("b/scratch evicted %v, want %v", got, want)
		}
		if got, want := summed.failed[treeKey{"a", area.Workspace}]+summed.failed[treeKey{"a", area.Cache}], 8.0; got != want {
			t.Errorf("failed %v, want %v", got, want)
		}
		if summed.sweeps.count != 8 || summed.walks[treeKey{"a", area.Cache}].count != 4*3+4 {
			t.Errorf("sweeps %d, a/cache walks %d; want 8 and 16", summed.sweeps.count, summed.walks[treeKey{"a", area.Cache}].count)
		}

		// A restart after more records: the checkpoint, then the records
		// after it; then another from a later checkpoint, with records too
		// new to sum.
		st := sandbox.TestStore(m)
		first, ok, err := st.JournalCheckpoint(ctx, journalBuckets)
		if err != nil || !ok || first.UpTo == 0 {
			t.Fatalf("the checkpoint: %+v %v %v", first, ok, err)
		}
		journalSome(4)
		evict("a", area.Cache, "s", 1000, deletion.StateDone) // the newest: the next checkpoint ends on it
		age(t, r, 10*time.Minute)
		if t0, err := st.JournalTotals(ctx, time.Now().Add(-5*time.Minute), journalBuckets); err != nil || t0.From != first.UpTo || t0.UpTo <= t0.From {
			t.Fatalf("a restart's catch-up %+v %v: want it from the checkpoint at %d", t0, err, first.UpTo)
		}
		check("a restart past the checkpoint", newCollector(r.Root, nil, nil))
		checkpoint()
		journalSome(5)
		check("a second restart", newCollector(r.Root, nil, nil))

		// A prune: what it removes, the checkpoint holds first (here it is
		// behind: round 5 settles only now), and a restart counts as before.
		journalSome(6)
		age(t, r, 10*time.Minute)
		check("before the prune")
		if _, err := st.PruneEvents(ctx, time.Now().Add(-time.Minute), "1m", "test", 0); err != nil {
			t.Fatal(err)
		}
		var left []journal.Event
		if left, err = st.EventsAfter(ctx, 0, nil, 0); err != nil || len(left) != 2 { // journal.pruned, and the pending deletion's
			t.Fatalf("%d records left after the prune (%v), want 2", len(left), err)
		}
		check("a restart after the prune", newCollector(r.Root, nil, nil))

		// The first read did sum in the database.
		c := sandbox.JournalCursor{Buckets: journalBuckets}
		news, err := m.ReadJournal(ctx, &c)
		if err != nil {
			t.Fatal(err)
		}
		if len(news.DeletionTotals) == 0 || len(news.WalkTotals) == 0 || len(news.Deletions)+len(news.Walks) != 0 {
			t.Errorf("first read: %d deletion totals, %d walk totals, %d deletions, %d walks: want totals only",
				len(news.DeletionTotals), len(news.WalkTotals), len(news.Deletions), len(news.Walks))
		}
	})
}

// sameCounters: c's counters are want's.
// (the last pass too, unless c began after age moved the records: it
// reads their new times).
func sameCounters(t *testing.T, when string, c, want *collector, restarted bool) {
	t.Helper()
	for _, f := range []struct {
		name string
		a, b any
	}{{"evicted bytes", c.evicted, want.evicted}, {"failed deletions", c.failed, want.failed},
		{"sweeps", c.sweeps, want.sweeps}, {"walks", c.walks, want.walks}, {"last pass", c.lastPass, want.lastPass}} {
		if f.name == "last pass" && restarted {
			continue
		}
		if !reflect.DeepEqual(f.a, f.b) {
			t.Errorf("%s: %s summed %+v, one by one %+v", when, f.name, f.a, f.b)
		}
	}
}

// age makes every record of the journal older by d, as if journalled d
// earlier.
func age(t *testing.T, r *fixture.Root, d time.Duration) {
	t.Helper()
	driver, q := "sqlite", `UPDATE events SET at = at - ?`
	if r.Driver == "postgres" {
		driver, q = "postgres", `UPDATE events SET at = at - $1`
	}
	db, err := sql.Open(driver, r.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(r.Ctx, q, d.Microseconds()); err != nil {
		t.Fatal(err)
	}
}
