package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
)

// TreeUsages gives every tree the figure Account gives it one by one
// (walk + ledger + reservations), only for this host.
func TestTreeUsagesMatchAccount(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		other, err := Open(ctx, dsn, "host-b")
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		for _, st := range []*Store{s, other} {
			if err := st.InTx(ctx, func(tx *Tx) error {
				for i, p := range []string{"a", "b", "c"} {
					if _, _, err := tx.InsertProject(ctx, p, "", time.Now()); err != nil {
						return err
					}
					for j, area := range []string{"cache", "workspace"} {
						if err := tx.InsertTree(ctx, Tree{Project: p, Area: area, Path: area + "/" + p, Backend: "fallback", FSUUID: "u",
							ProjectID: quota.ProjectID(10*i + j + 1), Limits: quota.Limits{BytesHard: uint64(1000 * (i + 1))}}); err != nil {
							return err
						}
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		walk := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
		if err := s.SetBaseline(ctx, TreeKey{Project: "a", Area: "workspace"}, quota.Usage{Bytes: 500, Inodes: 5}, WalkAt(walk), WalkSeen{}); err != nil {
			t.Fatal(err)
		}
		if err := s.AddLedger(ctx, TreeKey{Project: "a", Area: "workspace"}, 70, 1, "test", time.Time{}); err != nil {
			t.Fatal(err)
		}
		if err := s.AddLedger(ctx, TreeKey{Project: "b", Area: "cache"}, 30, 2, "test", time.Time{}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Reserve(ctx, TreeKey{Project: "c", Area: "workspace"}, 9, 1, "h", "", time.Hour, nil, admitAll); err != nil {
			t.Fatal(err)
		}
		if err := other.AddLedger(ctx, TreeKey{Project: "a", Area: "workspace"}, 1<<20, 1, "test", time.Time{}); err != nil {
			t.Fatal(err)
		}
		got, err := s.TreeUsages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 6 {
			t.Fatalf("%d trees, want 6 (this host's only)", len(got))
		}
		for _, u := range got {
			limits, used, _, err := s.Account(ctx, TreeKey{Project: u.Project, Area: u.Area})
			if err != nil {
				t.Fatal(err)
			}
			if u.Used != used || u.Limits != limits {
				t.Errorf("%s/%s: TreeUsages %+v %+v, Account %+v %+v", u.Project, u.Area, u.Used, u.Limits, used, limits)
			}
			last, _ := s.Baseline(ctx, TreeKey{Project: u.Project, Area: u.Area})
			if !u.WalkedAt.Equal(last.At) {
				t.Errorf("%s/%s: walked at %v, Baseline says %v", u.Project, u.Area, u.WalkedAt, last.At)
			}
		}
		if got[1].Project != "a" || got[1].Area != "workspace" || got[1].Used.Bytes != 570 || !got[1].WalkedAt.Equal(walk) {
			t.Errorf("a/workspace: %+v, want 570 bytes walked at %v", got[1], walk)
		}
	})
}

// EventsAfter pages forward through this host's events of the given types.
func TestEventsAfter(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		other, err := Open(ctx, dsn, "host-b")
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		for i := range 5 {
			for _, st := range []*Store{s, other} {
				if err := st.InTx(ctx, func(tx *Tx) error {
					if err := tx.AppendEventOfType(ctx, journal.TypeSwept, "", "t", map[string]int{"n": i}); err != nil {
						return err
					}
					return tx.AppendEventOfType(ctx, journal.TypeQuotaChanged, "p", "t", map[string]int{"n": i})
				}); err != nil {
					t.Fatal(err)
				}
			}
		}
		var seen []string
		after := int64(0)
		for {
			page, err := s.EventsAfter(ctx, after, []journal.Type{journal.TypeSwept}, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			for _, e := range page {
				if e.ID <= after || e.Host != "host-a" || e.Type != journal.TypeSwept {
					t.Errorf("event %+v after %d", e, after)
				}
				after = e.ID
				seen = append(seen, string(e.Payload))
			}
		}
		if fmt.Sprint(seen) != `[{"n":0} {"n":1} {"n":2} {"n":3} {"n":4}]` {
			t.Errorf("paged %v, want this host's five sweeps in order", seen)
		}
		both, err := s.EventsAfter(ctx, 0, []journal.Type{journal.TypeSwept, journal.TypeQuotaChanged}, 0)
		if err != nil || len(both) != 10 {
			t.Errorf("two types: %d events (%v), want 10", len(both), err)
		}
	})
}
