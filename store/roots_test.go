package store

import (
	"errors"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
)

// A host name is bound to one root: another root under it, or the root
// under another name, is refused with nothing written; a takeover is the
// operator's and is journalled with the root it replaced.
func TestBindOneRootPerHost(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		a, b := open(t, dsn), open(t, dsn)
		b.Host = "host-b"
		r1 := RootBinding{RootID: "id-1", FSID: "uuid:u1", Path: "/srv/a"}
		r2 := RootBinding{RootID: "id-2", FSID: "uuid:u2", Path: "/srv/b"}
		if err := a.Bind(ctx, r1, "init", "op", "", false); err != nil {
			t.Fatal(err)
		}
		if err := a.Bind(ctx, r1, "open", "op", "", false); err != nil {
			t.Fatalf("binding as it is: %v", err)
		}
		cases := []struct {
			name      string
			s         *Store
			r         RootBinding
			takeOver  bool
			held      string // the conflict's held root, or
			boundHost string // the host the root is bound to
		}{
			{"another root under host-a", a, r2, false, "id-1", ""},
			{"the root under host-b", b, r1, false, "", "host-a"},
			{"the root under host-b, taking over", b, r1, true, "", "host-a"},
			{"a copy of the root on another filesystem", a, RootBinding{RootID: "id-1", FSID: "uuid:u9", Path: "/srv/a"}, false, "id-1", ""},
		}
		for _, c := range cases {
			err := c.s.Bind(ctx, c.r, "init", "op", "", c.takeOver)
			var conflict *BindConflict
			switch {
			case !errors.As(err, &conflict):
				t.Errorf("%s: %v, want a conflict", c.name, err)
			case c.held != "" && (conflict.Held == nil || conflict.Held.RootID != c.held):
				t.Errorf("%s: %+v, want host held by %s", c.name, conflict, c.held)
			case c.boundHost != "" && (conflict.Bound == nil || conflict.Bound.Host != c.boundHost):
				t.Errorf("%s: %+v, want the root bound to %s", c.name, conflict, c.boundHost)
			}
		}
		if n := countEvents(t, a, journal.TypeRootBound) + countEvents(t, b, journal.TypeRootBound); n != 1 {
			t.Errorf("%d root.bound records after refusals, want init's alone", n)
		}
		// The same root read its filesystem's id another way (the backend
		// changed): no conflict, the binding follows.
		if err := a.Bind(ctx, RootBinding{RootID: "id-1", FSID: "fsid:0011", Path: "/mnt/a"}, "open", "op", "", false); err != nil {
			t.Errorf("the same root seen another way: %v", err)
		}
		if err := a.Bind(ctx, r2, "init", "op", "", true); err != nil {
			t.Fatalf("takeover: %v", err)
		}
		held, _, ok, _, err := a.Bindings(ctx, "id-2")
		if err != nil || !ok || held.RootID != "id-2" {
			t.Errorf("after the takeover host-a is bound to %+v (%v)", held, err)
		}
		evs, _ := a.Events(ctx, EventFilter{Type: journal.TypeRootBound})
		p, err := evs[0].Decode()
		if rb, ok := p.(journal.RootBound); err != nil || !ok || rb.Why != "takeover" || rb.TookFrom == nil || rb.TookFrom.RootID != "id-1" || rb.TookFrom.Root != "/mnt/a" {
			t.Errorf("the takeover's record: %+v %v", p, err)
		}
	})
}

// Two hosts whose fallback roots share one path (so, before identities,
// one registry key) draw project IDs from sequences of their own; a host's
// IDs under its old key follow it to its root's new key.
func TestIDRegistryPerHost(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		a, b := open(t, dsn), open(t, dsn)
		b.Host = "host-b"
		r := quota.IDRange{First: 100, Last: 200}
		reserve := func(s *Store, key string) quota.ProjectID {
			t.Helper()
			var id quota.ProjectID
			if err := s.InTx(ctx, func(tx *Tx) error {
				var err error
				id, err = tx.ReserveID(ctx, key, r, nil, "omni/workspace")
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return id
		}
		if x, y := reserve(a, "fallback:/srv/sandbox"), reserve(b, "fallback:/srv/sandbox"); x != 100 || y != 100 {
			t.Errorf("first IDs of two hosts at one path: %d and %d, want 100 each", x, y)
		}
		if err := a.Bind(ctx, RootBinding{RootID: "id-a", Path: "/srv/sandbox"}, "upgrade", "op", "fallback:id-a", false); err != nil {
			t.Fatal(err)
		}
		if got := reserve(a, "fallback:id-a"); got != 101 {
			t.Errorf("host-a's next ID under its root's key: %d, want 101 (100 came with it)", got)
		}
		if got := reserve(b, "fallback:/srv/sandbox"); got != 101 {
			t.Errorf("host-b's next ID: %d, want 101 (host-a's are not its own)", got)
		}
	})
}

func countEvents(t *testing.T, s *Store, typ journal.Type) int {
	t.Helper()
	evs, err := s.Events(ctx, EventFilter{Type: typ})
	if err != nil {
		t.Fatal(err)
	}
	return len(evs)
}
