package store

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
)

// openHost is another host on the same store.
func openHost(t *testing.T, dsn, host string) *Store {
	t.Helper()
	s, err := Open(ctx, dsn, host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func addProject(t *testing.T, s *Store, name string, walked int64) {
	t.Helper()
	now := time.Now()
	if err := s.InTx(ctx, func(tx *Tx) error {
		if _, _, err := tx.InsertProject(ctx, name, "", now); err != nil {
			return err
		}
		return tx.InsertTree(ctx, Tree{Project: name, Area: "workspace", Path: "projects/" + name, Backend: "fallback", FSUUID: "u",
			ProjectID: 1, Limits: quota.Limits{BytesHard: 1000}})
	}); err != nil {
		t.Fatal(err)
	}
	if walked > 0 {
		if _, err := s.SQL.Exec(s.SQL.Rebind(`UPDATE trees SET walked_bytes = ?, walked_at = ? WHERE host = ? AND project = ?`),
			walked, toMicros(now), s.Host, name); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFleetHostsListsEveryHostBeatingOrNot(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		a, b, c := openHost(t, dsn, "host-a"), openHost(t, dsn, "host-b"), openHost(t, dsn, "host-c")
		addProject(t, a, "omni", 0)
		addProject(t, a, "zeta", 0)
		addProject(t, c, "omni", 0) // host-c never beats: it must still be listed
		at := time.Now().Add(-time.Minute).Truncate(time.Microsecond).UTC()
		for _, s := range []*Store{a, b} {
			if _, err := s.Heartbeat(ctx, Beat{At: at, Version: "v1", Backend: "fallback", Root: "/r/" + s.Host, Interval: 5 * time.Second}); err != nil {
				t.Fatal(err)
			}
		}
		later := at.Add(30 * time.Second)
		if _, err := a.Heartbeat(ctx, Beat{At: later, Version: "v2", Backend: "fallback", Root: "/r/host-a", Interval: 5 * time.Second}); err != nil {
			t.Fatal(err)
		}
		hosts, err := b.FleetHosts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(hosts) != 3 {
			t.Fatalf("FleetHosts = %+v, want host-a, host-b, host-c", hosts)
		}
		want := []struct {
			host     string
			Seen     time.Time
			version  string
			projects int64
		}{{"host-a", later, "v2", 2}, {"host-b", at, "v1", 0}, {"host-c", time.Time{}, "", 1}}
		for i, w := range want {
			h := hosts[i]
			if h.Host != w.host || !h.LastSeen.Equal(w.Seen) || h.Version != w.version || h.Projects != w.projects {
				t.Errorf("host %d = %+v, want %+v", i, h, w)
			}
		}
		if !hosts[0].FirstSeen.Equal(at) || hosts[0].Interval != 5*time.Second || hosts[0].Root != "/r/host-a" {
			t.Errorf("host-a's first beat or interval lost: %+v", hosts[0])
		}
	})
}

func TestFleetTreesCarryTheirHostAndTime(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		a, b := openHost(t, dsn, "host-a"), openHost(t, dsn, "host-b")
		addProject(t, a, "omni", 300)
		addProject(t, b, "omni", 0) // never walked: no figures, not zero-aged
		all, err := a.FleetTrees(ctx, nil)
		if err != nil || len(all) != 2 {
			t.Fatalf("FleetTrees(all) = %+v, %v", all, err)
		}
		if all[0].Host != "host-a" || all[0].UsedBytes != 300 || all[0].At == 0 || all[0].BytesHard != 1000 {
			t.Errorf("host-a's tree = %+v", all[0])
		}
		if all[1].Host != "host-b" || all[1].At != 0 {
			t.Errorf("host-b's unwalked tree = %+v", all[1])
		}
		only, err := a.FleetTrees(ctx, []string{"host-b"})
		if err != nil || len(only) != 1 || only[0].Host != "host-b" {
			t.Errorf("FleetTrees(host-b) = %+v, %v", only, err)
		}
	})
}

func TestRetireHostAbandonsItsPendingDeletionsAndKeepsItsHistory(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		a, gone := openHost(t, dsn, "host-a"), openHost(t, dsn, "host-gone")
		addProject(t, gone, "omni", 0)
		mine := journal.Evicted{SweepID: "sw-a", Area: "cache", Path: "cache/omni/a", State: journal.StatePending, Bytes: 10}
		theirs := journal.Evicted{SweepID: "sw-g", Area: "cache", Path: "cache/omni/g", State: journal.StatePending, Bytes: 20}
		for _, w := range []struct {
			s   *Store
			rec journal.Evicted
		}{{a, mine}, {gone, theirs}} {
			if err := w.s.InTx(ctx, func(tx *Tx) error { return tx.AppendEvent(ctx, "omni", "sweeper", w.rec) }); err != nil {
				t.Fatal(err)
			}
		}
		before, _ := gone.Events(ctx, EventFilter{Limit: 100})
		res, err := a.RetireHost(ctx, "host-gone", "ops", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Abandoned) != 1 || res.Abandoned[0].Record.Path != theirs.Path || res.Abandoned[0].Project != "omni" ||
			res.Abandoned[0].Record.State != journal.StateAbandoned {
			t.Errorf("abandoned = %+v, want host-gone's one pending deletion", res.Abandoned)
		}
		if p, _ := gone.PendingEvictions(ctx); len(p) != 0 {
			t.Errorf("host-gone still has pending deletions: %+v", p)
		}
		if p, _ := a.PendingEvictions(ctx); len(p) != 1 || p[0].Record.Path != mine.Path {
			t.Errorf("host-a's own pending deletion was touched: %+v", p)
		}
		after, _ := gone.Events(ctx, EventFilter{Limit: 100})
		if len(after) != len(before)+2 {
			t.Fatalf("host-gone's journal: %d records before, %d after; want its history plus an abandoned record and host.retired", len(before), len(after))
		}
		if after[0].Type != journal.TypeHostRetired || after[0].Host != "host-gone" || after[0].Actor != "ops" {
			t.Errorf("newest record %+v, want host.retired of host-gone by ops", after[0])
		}
		var settled journal.Evicted
		json.Unmarshal(after[1].Payload, &settled)
		if settled.State != journal.StateAbandoned || settled.Bytes != 0 || settled.Path != theirs.Path {
			t.Errorf("settled record %+v: want abandoned, claiming no bytes freed", settled)
		}
		if ps, _ := gone.Projects(ctx); len(ps) != 1 {
			t.Errorf("host-gone's registry lost rows: %+v", ps)
		}
		hosts, _ := a.FleetHosts(ctx)
		if len(hosts) != 1 || hosts[0].Host != "host-gone" || hosts[0].RetiredAt.IsZero() || hosts[0].RetiredBy != "ops" {
			t.Errorf("FleetHosts = %+v, want host-gone retired by ops", hosts)
		}
		again, err := a.RetireHost(ctx, "host-gone", "ops", time.Now())
		if err != nil || again.AlreadyAt.IsZero() || len(again.Abandoned) != 0 {
			t.Errorf("second retire = %+v, %v; want already retired, nothing done", again, err)
		}
		if retired, err := gone.Heartbeat(ctx, Beat{At: time.Now()}); err != nil || retired.IsZero() {
			t.Errorf("a retired host's beat = %v, %v; want its retirement time", retired, err)
		}
	})
}

func TestEventsAcrossHosts(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		a, b := openHost(t, dsn, "host-a"), openHost(t, dsn, "host-b")
		for _, s := range []*Store{a, b} {
			s.InTx(ctx, func(tx *Tx) error {
				return tx.AppendEvent(ctx, "omni", "x", journal.SettingChanged{Key: "k", New: s.Host})
			})
		}
		for _, c := range []struct {
			f     EventFilter
			hosts []string
		}{
			{EventFilter{}, []string{"host-a"}},
			{EventFilter{Hosts: []string{"host-b"}}, []string{"host-b"}},
			{EventFilter{AllHosts: true}, []string{"host-b", "host-a"}},
		} {
			evs, err := a.Events(ctx, c.f)
			var got []string
			for _, e := range evs {
				got = append(got, e.Host)
			}
			if err != nil || len(got) != len(c.hosts) || (len(got) > 0 && got[0] != c.hosts[0]) {
				t.Errorf("Events(%+v) hosts = %v, %v; want %v", c.f, got, err, c.hosts)
			}
		}
	})
}

// The fleet's storage is read with JIT off (it was costed for JIT and
// spent ~300 ms compiling a ~20 ms query), and only it: SET LOCAL ends with
// its transaction, and the pooled connection keeps the server's setting.
func TestFleetTreesReadWithoutJIT(t *testing.T) {
	s := open(t, storetest.Postgres(t)+"&jit=on")
	s.SQL.SetMaxOpenConns(1) // the same connection before, inside and after
	setting := func(db sqlx.QueryerContext) string {
		t.Helper()
		var v string
		if err := sqlx.GetContext(ctx, db, &v, `SELECT current_setting('jit')`); err != nil {
			t.Fatal(err)
		}
		return v
	}
	var inside string
	if err := s.WithoutJIT(ctx, func(db sqlx.QueryerContext) error { inside = setting(db); return nil }); err != nil {
		t.Fatal(err)
	}
	if before, after := "on", setting(s.SQL); inside != "off" || after != before {
		t.Errorf("jit inside %q, after %q: want off, then %q again", inside, after, before)
	}
	if _, err := s.FleetTrees(ctx, nil); err != nil {
		t.Fatal(err)
	}
}
