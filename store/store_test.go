package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store/internal/migrations"
)

var ctx = context.Background()

func open(t testing.TB, dsn string) *Store {
	t.Helper()
	s, err := Open(ctx, dsn, "host-a")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestMigrateIsIdempotentAndRefusesNewerSchema(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		open(t, dsn) // a second open migrates nothing and must not fail
		var n int
		if err := s.Get(ctx, &n, `SELECT COUNT(*) FROM schema_migrations`); err != nil || n != len(migrations.All) {
			t.Fatalf("schema_migrations has %d rows (%v), want %d", n, err, len(migrations.All))
		}
		if _, err := s.SQL.Exec(s.SQL.Rebind(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)`), len(migrations.All)+1); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(ctx, dsn, "host-a"); err == nil {
			t.Error("opening a database with a newer schema succeeded")
		}
	})
}

func TestProjectsAndTrees(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		other, _ := Open(ctx, dsn, "host-b")
		defer other.Close()
		now := time.Now()
		tree := Tree{Project: "omni", Area: "workspace", Path: "projects/omni", Backend: "xfs", FSUUID: "u1",
			ProjectID: 100000, Limits: quota.Limits{BytesHard: 50 << 30, InodesSoft: 7}, CreatedDir: true}
		err := s.InTx(ctx, func(tx *Tx) error {
			if _, ok, err := tx.InsertProject(ctx, "omni", "123", now); !ok || err != nil {
				return fmt.Errorf("insert: %v %v", ok, err)
			}
			return tx.InsertTree(ctx, tree)
		})
		if err != nil {
			t.Fatal(err)
		}
		s.InTx(ctx, func(tx *Tx) error {
			existing, ok, err := tx.InsertProject(ctx, "omni", "456", now)
			if ok || err != nil || existing.State != StateAdding || existing.Adder != "123" {
				t.Errorf("second insert: %+v %v %v; want the existing adding row", existing, ok, err)
			}
			return nil
		})
		// Another host sharing the database has its own namespace.
		if err := other.InTx(ctx, func(tx *Tx) error {
			_, ok, err := tx.InsertProject(ctx, "omni", "1", now)
			if !ok {
				return fmt.Errorf("host-b could not add its own omni: %v", err)
			}
			return err
		}); err != nil {
			t.Error(err)
		}
		trees, err := s.Trees(ctx, "omni")
		if err != nil || len(trees) != 1 || trees[0] != tree {
			t.Fatalf("Trees = %+v, %v; want [%+v]", trees, err, tree)
		}
		if err := s.InTx(ctx, func(tx *Tx) error {
			return tx.SetTreeLimits(ctx, "omni", "workspace", quota.Limits{BytesHard: 1})
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.InTx(ctx, func(tx *Tx) error { return tx.SetTreeLimits(ctx, "omni", "nope", quota.Limits{}) }); !errors.Is(err, ErrNotFound) {
			t.Errorf("limits of a missing tree: %v, want ErrNotFound", err)
		}
		s.InTx(ctx, func(tx *Tx) error { return tx.SetProjectState(ctx, "omni", StateReady, "") })
		if p, err := s.Project(ctx, "omni"); err != nil || p.State != StateReady {
			t.Errorf("Project = %+v, %v", p, err)
		}
		s.InTx(ctx, func(tx *Tx) error { return tx.DeleteProject(ctx, "omni") })
		if _, err := s.Project(ctx, "omni"); !errors.Is(err, ErrNotFound) {
			t.Errorf("after delete: %v", err)
		}
		if trees, _ := s.Trees(ctx, ""); len(trees) != 0 {
			t.Errorf("trees left after delete: %+v", trees)
		}
		if ps, _ := other.Projects(ctx); len(ps) != 1 {
			t.Errorf("host-b lost its project when host-a deleted its own: %+v", ps)
		}
	})
}

// idRegistry runs each ID call in a transaction of its own, as project does.
type idRegistry struct{ s *Store }

func (r idRegistry) Reserve(fsUUID string, rng quota.IDRange, excluded map[quota.ProjectID]bool, owner string) (quota.ProjectID, error) {
	var id quota.ProjectID
	err := r.s.InTx(ctx, func(tx *Tx) error {
		var err error
		id, err = tx.ReserveID(ctx, fsUUID, rng, excluded, owner)
		return err
	})
	return id, err
}

func (r idRegistry) Release(fsUUID string, id quota.ProjectID) error {
	return r.s.InTx(ctx, func(tx *Tx) error { return tx.ReleaseID(ctx, fsUUID, id) })
}

// reserveEach reserves n IDs one add at a time, as n adds would.
func reserveEach(t *testing.T, reg idRegistry, fsUUID string, rng quota.IDRange, excluded map[quota.ProjectID]bool, n int) []quota.ProjectID {
	t.Helper()
	var got []quota.ProjectID
	for range n {
		id, err := reg.Reserve(fsUUID, rng, excluded, "o")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	return got
}

func TestReserveID(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		reg := idRegistry{s}
		rng := quota.IDRange{First: 10, Last: 14}
		excluded := map[quota.ProjectID]bool{10: true, 12: true}
		if got := reserveEach(t, reg, "fs1", rng, excluded, 3); fmt.Sprint(got) != "[11 13 14]" {
			t.Errorf("reserved %v, want [11 13 14]", got)
		}
		if _, err := reg.Reserve("fs1", rng, excluded, "o"); err == nil {
			t.Error("exhausted range handed out an ID")
		}
		if id, err := reg.Reserve("fs2", rng, nil, "o"); err != nil || id != 10 {
			t.Errorf("another filesystem: %d, %v; want 10", id, err)
		}
		if err := reg.Release("fs1", 13); err != nil {
			t.Fatal(err)
		}
		if id, _ := reg.Reserve("fs1", rng, excluded, "o"); id != 13 {
			t.Errorf("after release reserved %d, want 13", id)
		}
		if _, err := reg.Reserve("fs1", quota.IDRange{First: 0, Last: 5}, nil, "o"); err == nil {
			t.Error("range including 0 accepted")
		}
	})
}

// TestReserveIDs: IDs are handed out lowest free first after the highest
// taken, past taken and excluded ones, as one batch (ReserveIDs) or one add
// at a time (ReserveID) alike. An ID freed below the highest is not handed
// out again until the range's top is taken (the next ID is one index
// lookup, not a search of every taken ID), and then it is; a range that
// cannot hold them all hands out none.
func TestReserveIDs(t *testing.T) {
	type step struct {
		release  quota.ProjectID // releases this ID; 0: reserves
		rng      quota.IDRange
		excluded []quota.ProjectID
		n        int
		each     bool   // n calls of ReserveID, as n adds would, not one batch
		want     string // the IDs handed out; "": refused
		why      string
	}
	wide, low, top := quota.IDRange{First: 10, Last: 30}, quota.IDRange{First: 10, Last: 19}, quota.IDRange{First: 10, Last: 15}
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"batches", []step{
			{rng: wide, n: 3, want: "[10 11 12]", why: "an empty registry"},
			{rng: quota.IDRange{First: 14, Last: 16}, n: 1, want: "[14]", why: "a range above a gap at 13"},
			{release: 11},
			// Taken: 10, 12, 14. The gaps at 11 and 13 wait for the range's top.
			{rng: wide, excluded: []quota.ProjectID{15}, n: 4, want: "[16 17 18 19]", why: "after the highest, past an excluded ID"},
			// 10-19's top is taken: its free IDs are the gaps 11, 13 and 15.
			{rng: low, n: 4, why: "4 IDs from a range with 3 free"},
			{rng: low, n: 3, want: "[11 13 15]", why: "the gaps of a range whose top is taken"},
		}},
		{"one add at a time", []step{
			{rng: top, n: 4, each: true, want: "[10 11 12 13]", why: "an empty registry"},
			{release: 11},
			{rng: top, excluded: []quota.ProjectID{14}, n: 2, each: true, want: "[15 11]",
				why: "15 after the highest (14 excluded), then 11 (the top taken)"},
			{rng: top, excluded: []quota.ProjectID{14}, n: 1, each: true, why: "a full range"},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			storetest.ForEach(t, func(t *testing.T, dsn string) {
				s := open(t, dsn)
				reg := idRegistry{s}
				for _, st := range c.steps {
					if st.release != 0 {
						if err := reg.Release("fs", st.release); err != nil {
							t.Fatal(err)
						}
						continue
					}
					excluded := map[quota.ProjectID]bool{}
					for _, id := range st.excluded {
						excluded[id] = true
					}
					var ids []quota.ProjectID
					var err error
					if st.each {
						for range st.n {
							var id quota.ProjectID
							if id, err = reg.Reserve("fs", st.rng, excluded, "o"); err != nil {
								break
							}
							ids = append(ids, id)
						}
					} else {
						err = s.InTx(ctx, func(tx *Tx) (err error) {
							ids, err = tx.ReserveIDs(ctx, "fs", st.rng, excluded, make([]string, st.n))
							return err
						})
					}
					switch {
					case st.want == "" && err == nil:
						t.Fatalf("%s: handed out %v, want none", st.why, ids)
					case st.want != "" && (err != nil || fmt.Sprint(ids) != st.want):
						t.Fatalf("%s: %v %v; want %s", st.why, ids, err, st.want)
					}
				}
			})
		})
	}
}

// Independent handles (separate connection pools, as separate processes
// have) reserving at once never get the same ID.
func TestReserveIDConcurrent(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		open(t, dsn)
		const workers, each = 6, 20
		ids := make(chan quota.ProjectID, workers*each)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				s, err := Open(ctx, dsn, "host-a")
				if err != nil {
					t.Error(err)
					return
				}
				defer s.Close()
				for range each {
					id, err := idRegistry{s}.Reserve("fs", quota.DefaultRange, nil, "w")
					if err != nil {
						t.Error(err)
						return
					}
					ids <- id
				}
			})
		}
		wg.Wait()
		close(ids)
		seen := map[quota.ProjectID]bool{}
		for id := range ids {
			if seen[id] {
				t.Errorf("ID %d reserved twice", id)
			}
			seen[id] = true
		}
		if len(seen) != workers*each {
			t.Errorf("%d distinct IDs, want %d", len(seen), workers*each)
		}
	})
}

func TestEvents(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		for i, e := range []struct {
			typ     journal.Type
			project string
		}{
			{journal.TypeProjectAdded, "a"}, {journal.TypeProjectAdded, "b"}, {journal.TypeQuotaChanged, "a"}, {journal.TypeProjectRemoved, "a"},
		} {
			if err := s.InTx(ctx, func(tx *Tx) error {
				return tx.AppendEventOfType(ctx, e.typ, e.project, "alice", map[string]int{"n": i})
			}); err != nil {
				t.Fatal(err)
			}
		}
		all, err := s.Events(ctx, EventFilter{})
		if err != nil || len(all) != 4 || all[0].Type != journal.TypeProjectRemoved || all[0].Actor != "alice" || all[0].Host != "host-a" {
			t.Fatalf("all events: %+v, %v", all, err)
		}
		var payload map[string]int
		if json.Unmarshal(all[0].Payload, &payload); payload["n"] != 3 {
			t.Errorf("payload %s", all[0].Payload)
		}
		if got, _ := s.Events(ctx, EventFilter{Project: "a"}); len(got) != 3 {
			t.Errorf("project a: %d events, want 3", len(got))
		}
		if got, _ := s.Events(ctx, EventFilter{Type: journal.TypeProjectAdded}); len(got) != 2 {
			t.Errorf("project.added: %d events, want 2", len(got))
		}
		if got, _ := s.Events(ctx, EventFilter{Limit: 2}); len(got) != 2 || got[1].Type != journal.TypeQuotaChanged {
			t.Errorf("limit 2: %+v", got)
		}
		if got, _ := s.Events(ctx, EventFilter{BeforeID: all[1].ID}); len(got) != 2 {
			t.Errorf("page before %d: %d events, want 2", all[1].ID, len(got))
		}
		if got, _ := s.Events(ctx, EventFilter{Since: time.Now().Add(time.Hour)}); len(got) != 0 {
			t.Errorf("since the future: %d events", len(got))
		}
	})
}

func TestSettings(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		if _, ok, err := s.Setting(ctx, "default_quota"); ok || err != nil {
			t.Errorf("unset setting: ok=%v err=%v", ok, err)
		}
		for _, v := range []string{"10GiB", "20GiB"} {
			s.InTx(ctx, func(tx *Tx) error { _, err := tx.SetSetting(ctx, "default_quota", v); return err })
		}
		if v, ok, _ := s.Setting(ctx, "default_quota"); !ok || v != "20GiB" {
			t.Errorf("setting = %q %v", v, ok)
		}
		all, _ := s.Settings(ctx)
		if len(all) != 1 {
			t.Errorf("settings: %v", all)
		}
	})
}

func TestClassifyAndRedact(t *testing.T) {
	cases := []struct{ dsn, kind, redacted string }{
		{"postgres://xfsq:secret@db:5432/x?sslmode=disable", KindPostgresURL, "postgres://xfsq:***@db:5432/x?sslmode=disable"},
		{"postgresql://xfsq:secret@db/x", KindPostgresURL, "postgresql://xfsq:***@db/x"},
		{"POSTGRES://xfsq:secret@db/x", KindPostgresURL, "POSTGRES://xfsq:***@db/x"},
		{"PostgreSQL://xfsq:secret@db/x", KindPostgresURL, "PostgreSQL://xfsq:***@db/x"},
		{"postgres://xfsq@db/x?sslmode=disable&password=secret", KindPostgresURL, "postgres://xfsq@db/x?sslmode=disable&password=***"},
		{"postgres://xfsq@db/x?PASSWORD=secret", KindPostgresURL, "postgres://xfsq@db/x?PASSWORD=***"},
		{"postgres://xfsq:sec%ret@db/x", KindPostgresURL, "postgres://xfsq:***@db/x"},
		{"postgres://xfsq:sec@ret@db/x", KindPostgresURL, "postgres://xfsq:***@db/x"},
		{"postgres://xfsq:sec/ret@db/x", KindPostgresURL, "postgres://xfsq:***@db/x"},
		{"postgres://db:5432/x", KindPostgresURL, "postgres://db:5432/x"},
		{"host=db user=xfsq password=secret dbname=x", KindPostgresKeywords, "host=db user=xfsq password=*** dbname=x"},
		{"host=db password='se cret' dbname=x", KindPostgresKeywords, "host=db password=*** dbname=x"},
		// Unquoted, a space splits the password: the blank runs to the next key=.
		{"host=db password=se cret tail dbname=x", KindPostgresKeywords, "host=db password=*** dbname=x"},
		{"host=db password=se cret tail dbname =x", KindPostgresKeywords, "host=db password=*** dbname =x"},
		{"host=db password=se cret", KindPostgresKeywords, "host=db password=***"},
		{" password = secret host=db", KindPostgresKeywords, " password = *** host=db"},
		{"dbname=x sslmode=disable", KindPostgresKeywords, "dbname=x sslmode=disable"},
		{"host=db sslpassword=secret dbname=x", KindPostgresKeywords, "host=db sslpassword=*** dbname=x"},
		{"sslpassword=secret host=db", KindPostgresKeywords, "sslpassword=*** host=db"},
		{"postgres://xfsq@db/x?sslpassword=secret", KindPostgresURL, "postgres://xfsq@db/x?sslpassword=***"},
		{"/var/lib/xfsq/xfsq.db", KindSQLite, "/var/lib/xfsq/xfsq.db"},
		{"state/a=b.db", KindSQLite, "state/a=b.db"},
		{"mysql://u:secret@h/db", "", "mysql://u:***@h/db"},
	}
	for _, c := range cases {
		kind, err := Classify(c.dsn)
		if kind != c.kind || (c.kind == "") != (err != nil) {
			t.Errorf("Classify(%q) = %q, %v; want %q", c.dsn, kind, err, c.kind)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("Classify(%q) error shows the password: %v", c.dsn, err)
		}
		if got := Redact(c.dsn); got != c.redacted {
			t.Errorf("Redact(%q) = %q, want %q", c.dsn, got, c.redacted)
		}
	}
}

// Whatever form a PostgreSQL DSN takes, well-formed or not, Open neither
// shows its password in an error nor takes it for a SQLite path (which
// created files named after it, and used an empty database).
func TestOpenNeverShowsOrWritesThePassword(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	// Port 1 on the loopback refuses at once: each open fails to connect.
	for _, dsn := range []string{
		"postgres://xfsq:secret@127.0.0.1:1/x?sslmode=disable",
		"POSTGRES://xfsq:secret@127.0.0.1:1/x?sslmode=disable",
		"postgres://xfsq@127.0.0.1:1/x?sslmode=disable&password=secret",
		"postgres://xfsq:sec%ret@127.0.0.1:1/x",
		"postgres://xfsq:secret@[::1/x",
		"postgres://xfsq:se cret@127.0.0.1:x/db",
		"host=127.0.0.1 port=1 user=xfsq password=secret dbname=x sslmode=disable",
		"host=127.0.0.1 port=1 password='se cret' dbname=x sslmode=disable",
		"password=secret host=127.0.0.1 port=1 dbname=x sslmode=disable bogus",
		"mysql://xfsq:secret@127.0.0.1:1/x",
	} {
		s, err := Open(ctx, dsn, "host-a")
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", dsn)
			continue
		}
		for _, secret := range []string{"secret", "sec%ret", "sec\x25ret", "se cret", "cret"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("Open(%q): the error shows the password: %v", dsn, err)
			}
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("opening PostgreSQL DSNs created files: %v", entries)
	}
}

func TestGrowth(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		k := TreeKey{Project: "omni", Area: "workspace"}
		if _, ok, err := s.Growth(ctx, k, 24*time.Hour); ok || err != nil {
			t.Fatalf("growth without snapshots: ok=%v err=%v", ok, err)
		}
		now := time.Now().Truncate(time.Second)
		for _, snap := range []struct {
			ago  time.Duration
			size uint64
		}{{8 * 24 * time.Hour, 100}, {7*24*time.Hour + time.Minute, 150}, {3 * 24 * time.Hour, 400}, {25 * time.Hour, 900}, {23 * time.Hour, 950}, {0, 1000}} {
			err := s.InTx(ctx, func(tx *Tx) error {
				return tx.AddSnapshot(ctx, Snapshot{Project: "omni", Area: "workspace", At: now.Add(-snap.ago), SizeBytes: snap.size, KernelBytes: -1}, treeBytes(snap.size), 35*24*time.Hour)
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		// Partial walks (their budget ran out) saw part of the tree: one
		// where the 24-hour window would start, and the newest of all.
		for _, p := range []struct {
			at   time.Time
			size uint64
		}{{now.Add(-24*time.Hour - 30*time.Minute), 5}, {now.Add(30 * time.Second), 7}} {
			if err := s.InTx(ctx, func(tx *Tx) error {
				return tx.AddSnapshot(ctx, Snapshot{Project: "omni", Area: "workspace", At: p.at, SizeBytes: p.size, Partial: true, KernelBytes: -1}, treeBytes(p.size), 35*24*time.Hour)
			}); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			window time.Duration
			want   int64
		}{{24 * time.Hour, 1000 - 900}, {7 * 24 * time.Hour, 1000 - 150}, {time.Hour, 1000 - 950}} {
			got, ok, err := s.Growth(ctx, k, c.window)
			if err != nil || !ok || got != c.want {
				t.Errorf("growth over %v = %d (ok %v, %v), want %d", c.window, got, ok, err, c.want)
			}
		}
		if _, ok, _ := s.Growth(ctx, k, 30*24*time.Hour); ok {
			t.Error("growth over 30 days with 8 days of history must be unknown")
		}
		latest, ok, err := s.LatestSnapshot(ctx, k)
		if err != nil || !ok || latest.SizeBytes != 7 || !latest.Partial {
			t.Errorf("latest: %+v %v %v, want the partial one", latest, ok, err)
		}
		if _, ok, err := s.GrowthTo(ctx, latest, time.Hour); ok || err != nil {
			t.Errorf("growth to a partial snapshot: ok %v %v", ok, err)
		}
		complete, ok, err := s.LatestCompleteSnapshot(ctx, k)
		if err != nil || !ok || complete.SizeBytes != 1000 || !complete.At.Equal(now) {
			t.Errorf("latest complete: %+v %v %v", complete, ok, err)
		}
		if tree, err := s.LatestTree(ctx, k); err != nil || string(tree) != string(treeBytes(7)) {
			t.Errorf("latest tree: %s %v", tree, err)
		}
		if tree, err := s.LatestTree(ctx, TreeKey{Project: "omni", Area: "cache"}); err != nil || tree != nil {
			t.Errorf("latest tree of a tree never snapshotted: %s %v", tree, err)
		}
		// A snapshot kept with a 2-day retention drops the older totals:
		// the 7-day window has no start any more, the 24-hour one still has.
		if err := s.InTx(ctx, func(tx *Tx) error {
			return tx.AddSnapshot(ctx, Snapshot{Project: "omni", Area: "workspace", At: now.Add(time.Minute), SizeBytes: 1100, KernelBytes: -1}, []byte(`{}`), 2*24*time.Hour)
		}); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := s.Growth(ctx, k, 7*24*time.Hour); ok {
			t.Error("growth over 7 days after a 2-day retention dropped its start")
		}
		if got, ok, _ := s.Growth(ctx, k, 24*time.Hour); !ok || got != 1100-900 {
			t.Errorf("growth over 24 h after the retention: %d %v, want %d", got, ok, 1100-900)
		}
	})
}

func TestLeases(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		now := time.Now()
		in := func(fn func(tx *Tx) error) {
			t.Helper()
			if err := s.InTx(ctx, fn); err != nil {
				t.Fatal(err)
			}
		}
		in(func(tx *Tx) error { _, err := tx.AcquireLease(ctx, "omni", "run-1", now.Add(time.Hour)); return err })
		in(func(tx *Tx) error { _, err := tx.AcquireLease(ctx, "omni", "run-2", now.Add(-time.Minute)); return err })
		in(func(tx *Tx) error { _, err := tx.AcquireLease(ctx, "other", "run-9", now.Add(time.Minute)); return err })
		in(func(tx *Tx) error { _, err := tx.AcquireLease(ctx, "omni", "run-1", now.Add(2*time.Hour)); return err }) // renew
		// A renewal for less keeps the later expiry, and says which it is.
		in(func(tx *Tx) error {
			got, err := tx.AcquireLease(ctx, "omni", "run-1", now.Add(time.Minute))
			if err == nil && !got.After(now.Add(90*time.Minute)) {
				t.Errorf("a shorter renewal gave %v, want the 2h expiry kept", got)
			}
			return err
		})
		all, _ := s.Leases(ctx)
		if len(all) != 3 || !all[0].ExpiresAt.After(now.Add(90*time.Minute)) {
			t.Errorf("leases: %+v", all)
		}
		active, _ := s.ActiveLeases(ctx, now)
		if fmt.Sprint(active) != "map[omni:[run-1] other:[run-9]]" {
			t.Errorf("active: %v (an expired lease must not count)", active)
		}
		var had bool
		in(func(tx *Tx) error { var err error; had, err = tx.ReleaseLease(ctx, "omni", "run-1"); return err })
		if !had {
			t.Error("releasing a held lease reported none")
		}
		in(func(tx *Tx) error { var err error; had, err = tx.ReleaseLease(ctx, "omni", "nope"); return err })
		if had {
			t.Error("releasing an unknown lease reported one")
		}
		if active, _ := s.ActiveLeases(ctx, now); len(active["omni"]) != 0 {
			t.Errorf("after release: %v", active)
		}
		for project, want := range map[string]bool{"omni": false, "other": true, "nobody": false} {
			if got, err := s.Leased(ctx, project, now); err != nil || got != want {
				t.Errorf("Leased(%s) = %v, %v; want %v (run-2's lease had expired)", project, got, err, want)
			}
		}
	})
}

// A deletion's pending record is written only while its project holds no
// unexpired lease, checked in the same transaction.
func TestAppendPendingUnlessLeased(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		now := time.Now()
		if err := s.InTx(ctx, func(tx *Tx) error {
			if _, err := tx.AcquireLease(ctx, "held", "run-1", now.Add(time.Hour)); err != nil {
				return err
			}
			_, err := tx.AcquireLease(ctx, "lapsed", "run-1", now.Add(-time.Second))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		for project, wantLeased := range map[string]bool{"held": true, "lapsed": false, "free": false} {
			rec := journal.Evicted{SweepID: "s1", Path: "cache/" + project + "/x", State: journal.StatePending}
			leased, err := s.AppendPendingUnlessLeased(ctx, project, "t", rec, now)
			if err != nil || leased != wantLeased {
				t.Errorf("%s: leased %v, %v; want %v", project, leased, err, wantLeased)
			}
		}
		if got := pendingPaths(t, s); fmt.Sprint(got) != "[free s1:cache/free/x lapsed s1:cache/lapsed/x]" &&
			fmt.Sprint(got) != "[lapsed s1:cache/lapsed/x free s1:cache/free/x]" {
			t.Errorf("pending: %q; want the unleased projects' records only", got)
		}
	})
}

// A saved plan's hash is kept per host; it is applied once.
func TestSweepPlans(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s, other := open(t, dsn), open(t, dsn)
		other.Host = "host-b"
		made := time.Now().Truncate(time.Microsecond)
		if err := s.RecordPlan(ctx, "pl-1", "abc", made, []byte("{\"plan\": 1}\n")); err != nil {
			t.Fatal(err)
		}
		if p, err := s.Plan(ctx, "pl-1"); err != nil || p.Digest != "abc" || !p.CreatedAt.Equal(made) || !p.AppliedAt.IsZero() || string(p.Body) != "{\"plan\": 1}\n" {
			t.Errorf("plan: %+v %v", p, err)
		}
		if _, err := other.Plan(ctx, "pl-1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("another host's plan: %v, want ErrNotFound", err)
		}
		if ok, err := s.MarkPlanApplied(ctx, "pl-1", "other-digest", time.Now()); ok || err != nil {
			t.Errorf("marked with another digest: %v %v", ok, err)
		}
		if ok, err := s.MarkPlanApplied(ctx, "pl-1", "abc", time.Now()); !ok || err != nil {
			t.Errorf("first apply: %v %v", ok, err)
		}
		if ok, err := s.MarkPlanApplied(ctx, "pl-1", "abc", time.Now()); ok || err != nil {
			t.Errorf("second apply: %v %v; want refused", ok, err)
		}
	})
}

// A journal record must reach the disk before the deletion it announces, so
// every SQLite connection syncs the WAL at commit (PostgreSQL does by default).
func TestSQLiteCommitsAreDurable(t *testing.T) {
	s := open(t, t.TempDir()+"/x.db")
	s.SQL.SetMaxOpenConns(3)
	var wg sync.WaitGroup
	for range 3 { // several pooled connections: each must carry the pragmas
		wg.Add(1)
		go func() {
			defer wg.Done()
			tx, err := s.SQL.Beginx()
			if err != nil {
				t.Error(err)
				return
			}
			defer tx.Rollback()
			var mode string
			var sync int
			if err := tx.Get(&mode, `PRAGMA journal_mode`); err != nil || mode != "wal" {
				t.Errorf("journal_mode %q (%v), want wal", mode, err)
			}
			if err := tx.Get(&sync, `PRAGMA synchronous`); err != nil || sync != 2 {
				t.Errorf("synchronous = %d (%v), want 2 (FULL)", sync, err)
			}
			time.Sleep(20 * time.Millisecond) // hold the connection so the others open their own
		}()
	}
	wg.Wait()
}

// evicted journals one storage.evicted record as the sweeper, purge and
// file layer do.
func evicted(t *testing.T, s *Store, project, sweep, path, state string) {
	t.Helper()
	rec := map[string]any{"path": path, "state": state}
	if sweep != "" {
		rec["sweep_id"] = sweep
	}
	if err := s.InTx(ctx, func(tx *Tx) error { return tx.AppendEventOfType(ctx, journal.TypeEvicted, project, "t", rec) }); err != nil {
		t.Fatal(err)
	}
}

func pendingPaths(t *testing.T, s *Store) []string {
	t.Helper()
	pending, err := s.PendingEvictions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pending {
		out = append(out, fmt.Sprintf("%s %s:%s", p.Project, p.Record.SweepID, p.Record.Path))
	}
	return out
}

func TestPendingEvictions(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s, other := open(t, dsn), open(t, dsn)
		other.Host = "host-b"
		evicted(t, s, "omni", "s1", "cache/omni/a", "pending")
		evicted(t, s, "omni", "s1", "cache/omni/b", "pending")
		evicted(t, s, "omni", "s1", "cache/omni/a", "done")
		evicted(t, s, "omni", "", "projects/omni", "pending") // a purge: no sweep
		evicted(t, s, "beta", "s2", "cache/beta/c", "pending")
		evicted(t, s, "beta", "s2", "cache/beta/c", "failed")
		evicted(t, s, "beta", "s3", "cache/beta/c", "pending") // a later sweep, same path
		evicted(t, other, "omni", "s9", "cache/omni/z", "pending")
		want := []string{"omni s1:cache/omni/b", "omni :projects/omni", "beta s3:cache/beta/c"}
		if got := pendingPaths(t, s); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("pending: %q, want %q", got, want)
		}
		if got := pendingPaths(t, other); fmt.Sprint(got) != "[omni s9:cache/omni/z]" {
			t.Errorf("pending on the other host: %q", got)
		}
		for _, k := range [][2]string{{"s1", "cache/omni/b"}, {"", "projects/omni"}, {"s3", "cache/beta/c"}} {
			evicted(t, s, "x", k[0], k[1], "done")
		}
		if got := pendingPaths(t, s); len(got) != 0 {
			t.Errorf("pending after every deletion was settled: %q", got)
		}
	})
}

// Two deletions of one path outside sweeps (two files rm, say) are two
// pending rows: settling one leaves the other pending.
func TestPendingEvictionsOutsideSweepsAreKeyedPerDeletion(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		rec := func(id, state string) {
			t.Helper()
			r := map[string]any{"path": "projects/omni/x", "state": state, "deletion_id": id}
			if err := s.InTx(ctx, func(tx *Tx) error { return tx.AppendEventOfType(ctx, journal.TypeEvicted, "omni", "t", r) }); err != nil {
				t.Fatal(err)
			}
		}
		rec("rm-1", "pending")
		rec("rm-2", "pending")
		if got := pendingPaths(t, s); len(got) != 2 {
			t.Fatalf("two deletions of one path: pending %q, want both", got)
		}
		rec("rm-1", "done")
		pending, err := s.PendingEvictions(ctx)
		if err != nil || len(pending) != 1 || pending[0].Record.DeletionID != "rm-2" {
			t.Errorf("after the first was settled: %+v %v; want rm-2 still pending", pending, err)
		}
	})
}

// Migration 7 keys pending deletions by deletion id too; the rows kept
// before it stay pending.
func TestPendingEvictionsKeptAcrossMigration7(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		old := openAtVersion(t, dsn, 6)
		for _, r := range [][2]string{{"s1", "cache/omni/a"}, {"", "projects/omni"}} {
			payload := fmt.Sprintf(`{"sweep_id":%q,"path":%q,"state":"pending"}`, r[0], r[1])
			var id int64
			if err := old.SQL.QueryRow(old.SQL.Rebind(`INSERT INTO events (at, type, host, project, actor, payload) VALUES (1, ?, 'host-a', 'omni', 't', ?) RETURNING id`), string(journal.TypeEvicted), payload).Scan(&id); err != nil {
				t.Fatal(err)
			}
			if _, err := old.SQL.Exec(old.SQL.Rebind(`INSERT INTO evictions_pending (host, sweep_id, path, event_id) VALUES ('host-a', ?, ?, ?)`), r[0], r[1], id); err != nil {
				t.Fatal(err)
			}
		}
		old.Close()
		s := open(t, dsn)
		want := []string{"omni s1:cache/omni/a", "omni :projects/omni"}
		if got := pendingPaths(t, s); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("pending after migration 7: %q, want %q", got, want)
		}
		evicted(t, s, "omni", "", "projects/omni", "done")
		if got := pendingPaths(t, s); fmt.Sprint(got) != "[omni s1:cache/omni/a]" {
			t.Errorf("settling a record written before migration 7: pending %q", got)
		}
	})
}

// openAtVersion opens dsn with the schema as it was after migration
// version, for a test of the migrations that follow.
func openAtVersion(t *testing.T, dsn string, version int) *Store {
	t.Helper()
	all := migrations.All
	migrations.All = all[:version]
	defer func() { migrations.All = all }()
	s, err := Open(ctx, dsn, "host-a")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// treeBytes stands for a stored tree: bytes, NUL and invalid UTF-8
// included, as the binary stored form has them.
func treeBytes(size uint64) []byte { return fmt.Appendf([]byte{3, 0, 0xff}, "%d", size) }

// Migration 6 keeps trees as bytes; the JSON ones kept before it read back
// as they were written.
func TestSnapshotTreesMigratedToBytes(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		old := openAtVersion(t, dsn, 5)
		const v2 = `[2,[".",4096,10,1,1,1796020226539391000],[["f",4096]]]`
		if _, err := old.SQL.Exec(old.SQL.Rebind(`INSERT INTO snapshot_trees (host, project, area, at, tree) VALUES ('host-a', 'omni', 'workspace', 1, ?)`), v2); err != nil {
			t.Fatal(err)
		}
		old.Close()
		s := open(t, dsn) // migrates to 6
		k := TreeKey{Project: "omni", Area: "workspace"}
		if tree, err := s.LatestTree(ctx, k); err != nil || string(tree) != v2 {
			t.Errorf("a JSON tree after the migration: %q %v", tree, err)
		}
		if err := s.InTx(ctx, func(tx *Tx) error {
			return tx.AddSnapshot(ctx, Snapshot{Project: "omni", Area: "workspace", At: time.Now(), KernelBytes: -1}, treeBytes(7), time.Hour)
		}); err != nil {
			t.Fatal(err)
		}
		if tree, err := s.LatestTree(ctx, k); err != nil || string(tree) != string(treeBytes(7)) {
			t.Errorf("a binary tree after the migration: %q %v", tree, err)
		}
	})
}

// Migration 5 fills evictions_pending from a journal written before it.
func TestPendingEvictionsMigratedFromTheJournal(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		old := openAtVersion(t, dsn, 4)
		for i, r := range []struct{ host, project, payload string }{
			{"host-a", "omni", `{"sweep_id":"s1","path":"cache/omni/a","state":"pending"}`},
			{"host-a", "omni", `{"sweep_id":"s1","path":"cache/omni/b","state":"pending"}`},
			{"host-a", "omni", `{"sweep_id":"s1","path":"cache/omni/a","state":"done"}`},
			{"host-a", "omni", `{"path":"projects/omni","state":"pending","reason":"purge"}`},
			{"host-a", "beta", `{"sweep_id":"s2","path":"cache/beta/c","state":"pending"}`},
			{"host-a", "beta", `{"sweep_id":"s2","path":"cache/beta/c","state":"pending"}`},
			{"host-b", "omni", `{"sweep_id":"s9","path":"cache/omni/z","state":"pending"}`},
			{"host-a", "omni", `{"name":"omni"}`},
		} {
			typ := journal.TypeEvicted
			if i == 7 {
				typ = journal.TypeProjectAdded
			}
			if _, err := old.SQL.Exec(old.SQL.Rebind(`INSERT INTO events (at, type, host, project, actor, payload) VALUES (?, ?, ?, ?, 't', ?)`),
				i, string(typ), r.host, r.project, r.payload); err != nil {
				t.Fatal(err)
			}
		}
		old.Close()
		s := open(t, dsn) // migrates to 5
		want := []string{"omni s1:cache/omni/b", "omni :projects/omni", "beta s2:cache/beta/c"}
		if got := pendingPaths(t, s); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("pending after the migration: %q, want %q", got, want)
		}
	})
}

// Opening a store whose schema is current only reads: it does not wait for
// the write lock that another process's transaction holds.
func TestOpenUpToDateDoesNotWaitForWriters(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "xfsq.db")
	writer := open(t, dsn)
	holding, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- writer.InTx(context.Background(), func(tx *Tx) error {
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	reader, err := Open(ctx, dsn, "test-host")
	close(release)
	if err != nil {
		t.Fatalf("open beside a writer: %v", err)
	}
	reader.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A tree kept again unchanged (an idle project's, on every pass) must not
// be written again: it is replaced in place, and SQLite skips the pages
// whose bytes are the same. Deleting and inserting it wrote all its
// overflow pages anew.
func TestKeepingAnUnchangedTreeWritesLittle(t *testing.T) {
	s := open(t, t.TempDir()+"/x.db")
	tree := make([]byte, 100_000) // ~25 pages of 4 KiB
	for i := range tree {
		tree[i] = byte(i * 7)
	}
	walFrames := func(at time.Time) int {
		t.Helper()
		if err := s.InTx(ctx, func(tx *Tx) error {
			return tx.AddSnapshot(ctx, Snapshot{Project: "omni", Area: "workspace", At: at, SizeBytes: 1, KernelBytes: -1}, tree, 24*time.Hour)
		}); err != nil {
			t.Fatal(err)
		}
		// The WAL holds just this commit: each call empties it at the end.
		checkpoint := func(mode string) (frames int) {
			var busy, done int
			if err := s.SQL.QueryRow(`PRAGMA wal_checkpoint(`+mode+`)`).Scan(&busy, &frames, &done); err != nil || busy != 0 {
				t.Fatalf("checkpoint: busy %d, %v", busy, err)
			}
			return frames
		}
		frames := checkpoint("PASSIVE")
		checkpoint("TRUNCATE")
		return frames
	}
	now := time.Now()
	if first := walFrames(now); first < 25 {
		t.Fatalf("the first snapshot wrote %d WAL frames: too few for a 100 KB tree, the test measures nothing", first)
	}
	if again := walFrames(now.Add(time.Hour)); again > 10 {
		t.Errorf("keeping the same tree again wrote %d WAL frames, want a handful (its row, the totals)", again)
	}
	tree[50_000]++ // one page of it changes
	if changed := walFrames(now.Add(2 * time.Hour)); changed > 11 {
		t.Errorf("a tree changed in one page wrote %d WAL frames", changed)
	}
}

// A deletion read as pending may be settled by its own process before a
// sweep or doctor, seeing that process gone, settles it too: the late
// settler journals nothing, so the deletion has one settled record.
func TestSettlePendingOnlyOnce(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		rec := map[string]any{"path": "projects/omni/old.log", "deletion_id": "d-1", "state": "pending"}
		if err := s.InTx(ctx, func(tx *Tx) error { return tx.AppendEventOfType(ctx, journal.TypeEvicted, "omni", "t", rec) }); err != nil {
			t.Fatal(err)
		}
		pending, _ := s.PendingEvictions(ctx)
		if len(pending) != 1 {
			t.Fatalf("%d pending, want 1", len(pending))
		}
		// Its own process settles it...
		done := journal.Evicted{Path: "projects/omni/old.log", DeletionID: "d-1", State: journal.StateDone}
		if err := s.InTx(ctx, func(tx *Tx) error { return tx.AppendEventOfType(ctx, journal.TypeEvicted, "omni", "t", done) }); err != nil {
			t.Fatal(err)
		}
		// ...then a settler that read it as pending comes, twice.
		for i := range 2 {
			late := journal.Evicted{Path: "projects/omni/old.log", DeletionID: "d-1", State: journal.StateDone, Recovered: true}
			if ok, err := s.SettlePending(ctx, "omni", "sweeper", late); err != nil || ok {
				t.Errorf("late settle %d: journalled %v (%v), want nothing journalled", i, ok, err)
			}
		}
		evs, _ := s.Events(ctx, EventFilter{Type: journal.TypeEvicted})
		if len(evs) != 2 {
			t.Errorf("%d storage.evicted records, want the pending and one settled", len(evs))
		}
		// A deletion still pending is settled, once.
		rec["deletion_id"], done.DeletionID = "d-2", "d-2"
		s.InTx(ctx, func(tx *Tx) error { return tx.AppendEventOfType(ctx, journal.TypeEvicted, "omni", "t", rec) })
		if ok, err := s.SettlePending(ctx, "omni", "sweeper", done); err != nil || !ok {
			t.Errorf("settle of a pending deletion: %v %v, want it journalled", ok, err)
		}
		if ok, _ := s.SettlePending(ctx, "omni", "sweeper", done); ok {
			t.Error("a second settle of the same deletion journalled again")
		}
	})
}

// A deletion confirmed done moves its project's version in the
// confirming transaction (the overview drops its path from top_paths),
// except a sweep's own: its sweep moves it once per project, as it ends
// it (EndSweep), one statement a deletion fewer. Another settler (doctor)
// of a sweep's deletion moves it at once.
func TestDeletionDoneMovesTheVersion(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		version := func() int64 {
			t.Helper()
			var v int64
			if err := s.Get(ctx, &v, `SELECT COALESCE(MAX(version), 0) FROM project_versions WHERE host = ? AND project = 'omni'`, s.Host); err != nil {
				t.Fatal(err)
			}
			return v
		}
		settle := func(rec journal.Evicted, confirm bool) (statements int64, moved bool) {
			t.Helper()
			if err := s.InTx(ctx, func(tx *Tx) error { return tx.AppendEvent(ctx, "omni", "t", rec) }); err != nil {
				t.Fatal(err)
			}
			rec.State = journal.StateDone
			v, before := version(), s.Statements()
			var err error
			if confirm {
				err = s.ConfirmPending(ctx, "omni", "t", rec)
			} else {
				_, err = s.SettlePending(ctx, "omni", "doctor", rec)
			}
			if err != nil {
				t.Fatal(err)
			}
			return s.Statements() - before, version() > v
		}
		pending := func(sweepID, path string) journal.Evicted {
			rec := journal.Evicted{SweepID: sweepID, Area: "workspace", Path: path, State: journal.StatePending}
			if sweepID == "" {
				rec.DeletionID = "rm-" + path
			}
			return rec
		}
		rmStatements, rmMoved := settle(pending("", "projects/omni/a"), true)
		sweepStatements, sweepMoved := settle(pending("sw-1", "projects/omni/b"), true)
		if !rmMoved || sweepMoved {
			t.Errorf("confirmed done: a files rm's moved the version %v, a sweep's %v; want true, false", rmMoved, sweepMoved)
		}
		if sweepStatements != rmStatements-1 {
			t.Errorf("a sweep's confirmation sent %d statements, a files rm's %d: want one fewer (no version move)", sweepStatements, rmStatements)
		}
		if _, moved := settle(pending("sw-2", "projects/omni/c"), false); !moved {
			t.Error("doctor settling a sweep's deletion left the version")
		}
		for _, deleted := range []bool{false, true} {
			v := version()
			if err := s.EndSweep(ctx, "omni", "holder", deleted); err != nil {
				t.Fatal(err)
			}
			if moved := version() > v; moved != deleted {
				t.Errorf("EndSweep with deleted %v moved the version: %v", deleted, moved)
			}
		}
	})
}

// A burst of as many concurrent readers as the pool keeps idle leaves its
// connections idle for the next burst instead of closing all but two
// (database/sql's default), which made a busy server open a connection
// per request.
func TestPoolKeepsABurstsConnections(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		idle := PoolIdle
		if s.Postgres {
			idle = s.Bounds().PoolMaxIdle
		}
		burst := func() {
			var wg sync.WaitGroup
			held := make(chan *sql.Conn, idle)
			for range idle {
				wg.Go(func() {
					c, err := s.SQL.Conn(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					held <- c
				})
			}
			wg.Wait()
			close(held)
			for c := range held {
				c.Close()
			}
		}
		burst()
		burst()
		st := s.SQL.Stats()
		if st.MaxIdleClosed != 0 || st.Idle < idle {
			t.Errorf("after two bursts of %d: %d connections closed for the idle limit, %d idle; want none closed and %d idle",
				idle, st.MaxIdleClosed, st.Idle, idle)
		}
	})
}

// A burst of more concurrent transactions than PostgreSQL takes clients
// waits for the pool instead of failing with "too many clients": one
// process never holds more connections than its DSN's pool_max_open.
func TestABurstNeverExhaustsPostgres(t *testing.T) {
	s := open(t, storetest.Postgres(t)+"&pool_max_open=3")
	var max int
	if err := s.SQL.QueryRow(`SHOW max_connections`).Scan(&max); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, max+10)
	for range max + 10 {
		wg.Go(func() {
			errs <- s.InTx(ctx, func(tx *Tx) error {
				var one int
				err := tx.Get(ctx, &one, `SELECT 1`)
				time.Sleep(20 * time.Millisecond)
				return err
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a transaction of a burst of %d: %v", max+10, err)
		}
	}
	if st := s.SQL.Stats(); st.MaxOpenConnections != 3 || st.OpenConnections > 3 {
		t.Errorf("pool stats %+v: want at most 3 open (pool_max_open=3)", st)
	}
}

// scrub blanks a DSN's password field wherever a message quotes the DSN,
// and leaves the same text alone elsewhere.
func TestScrubRedactsPasswordFieldsOnly(t *testing.T) {
	for _, c := range []struct{ dsn, msg, want string }{
		{"postgres://xfsq:xfsq@db/xfsq", "schema 16 is newer than this xfsq knows (16): upgrade xfsq",
			"schema 16 is newer than this xfsq knows (16): upgrade xfsq"},
		{"postgres://xfsq:xfsq@db/xfsq", `parse "postgres://xfsq:xfsq@db:x/xfsq": invalid port`,
			`parse "postgres://xfsq:***@db:x/xfsq": invalid port`},
		{"postgres://u:se cret@db/x", `parse "postgres://u:se cret@db:x/x": invalid port`,
			`parse "postgres://u:***@db:x/x": invalid port`},
		{"postgres://u@db/x?password=xfsq", "dial postgres://u@db/x?sslmode=disable&password=xfsq: xfsq refused",
			"dial postgres://u@db/x?sslmode=disable&password=*** xfsq refused"},
		{"host=db user=xfsq password=xfsq", "bad conninfo host=db user=xfsq password=xfsq for xfsq",
			"bad conninfo host=db user=xfsq password=*** for xfsq"},
		{"host=db password='x fsq'", "bad conninfo host=db password='x fsq' near x fsq",
			"bad conninfo host=db password=*** near x fsq"},
		{"host=db sslpassword=xfsq", "key sslpassword = xfsq of xfsq", "key sslpassword = *** of xfsq"},
		// A DSN other than the one opened is redacted by its form.
		{"host=db", "postgres://other:hunter2@h/d and password=hunter2", "postgres://other:***@h/d and password=***"},
	} {
		if got := scrub(errors.New(c.msg), c.dsn).Error(); got != c.want {
			t.Errorf("scrub(%q) with %q:\n got %q\nwant %q", c.msg, c.dsn, got, c.want)
		}
	}
}

// TestReserveIDsConcurrentBatches: independent handles (as separate
// processes, or a fleet's hosts on one database under one host name after
// a take-over) reserving every area's IDs of an add at once, one batch a
// statement, never hold the same ID twice and never fail: every ID
// reserved is in the registry once, owned by the batch it was handed to.
func TestReserveIDsConcurrentBatches(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		open(t, dsn)
		const workers, each, areas = 4, 10, 3
		type got struct {
			owner string
			id    quota.ProjectID
		}
		out := make(chan got, workers*each*areas)
		eachHandle(t, dsn, workers, func(w int, s *Store) {
			for i := range each {
				owners := []string{fmt.Sprintf("w%d-%d/a", w, i), fmt.Sprintf("w%d-%d/b", w, i), fmt.Sprintf("w%d-%d/c", w, i)}
				var ids []quota.ProjectID
				err := s.InTx(ctx, func(tx *Tx) error {
					var err error
					ids, err = tx.ReserveIDs(ctx, "fs", quota.DefaultRange, nil, owners)
					return err
				})
				if err != nil {
					t.Error(err)
					return
				}
				for j, id := range ids {
					out <- got{owners[j], id}
				}
			}
		})
		close(out)
		s := open(t, dsn)
		owner := registryOwners(t, s, "fs")
		n := 0
		for g := range out {
			n++
			if owner[g.id] != g.owner {
				t.Errorf("ID %d was handed to %s, the registry says %q", g.id, g.owner, owner[g.id])
			}
		}
		if n != workers*each*areas || len(owner) != n {
			t.Errorf("%d IDs handed out, %d in the registry; want %d", n, len(owner), workers*each*areas)
		}
	})
}

// registryOwners is fsKey's ID registry as ID -> owner; an ID recorded
// twice fails t.
func registryOwners(t *testing.T, s *Store, fsKey string) map[quota.ProjectID]string {
	t.Helper()
	recs, err := s.IDs(ctx, fsKey)
	if err != nil {
		t.Fatal(err)
	}
	owner := map[quota.ProjectID]string{}
	for _, r := range recs {
		if _, dup := owner[r.ProjectID]; dup {
			t.Errorf("ID %d in the registry twice", r.ProjectID)
		}
		owner[r.ProjectID] = r.Owner
	}
	return owner
}

// eachHandle runs fn(w, s) for w in [0, n) at once, each with a store
// handle (and pool) of its own on dsn, as separate processes would, and
// waits for all.
func eachHandle(t *testing.T, dsn string, n int, fn func(w int, s *Store)) {
	t.Helper()
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			s, err := Open(ctx, dsn, "host-a")
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			fn(w, s)
		})
	}
	wg.Wait()
}
