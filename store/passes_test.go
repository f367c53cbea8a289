package store

import (
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
)

// A pass is claimed once per interval, by one holder at a time; a holder
// that is gone leaves it to be run again at once, as does one that gave
// it up; another host's pass is its own.
func TestClaimPass(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s, other := open(t, dsn), open(t, dsn)
		other.Host = "host-b"
		alive := func(string, HolderLease) (bool, string) { return false, "" }
		dead := func(string, HolderLease) (bool, string) { return true, "its process no longer runs" }
		now := time.Now().Truncate(time.Microsecond)
		claim := func(s *Store, holder string, at time.Time, gone Gone) bool {
			t.Helper()
			ok, _, err := s.ClaimPass(ctx, "snapshot", Claim{Holder: holder, Actor: "test", Gone: gone}, at, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !claim(s, "a", now, alive) {
			t.Fatal("a pass never run is not due")
		}
		if claim(s, "b", now, alive) {
			t.Error("claimed beside a live holder")
		}
		if !claim(other, "b", now, alive) {
			t.Error("another host's pass waits for this host's")
		}
		if st, err := s.Pass(ctx, "snapshot"); err != nil || st.Holder != "a" || !st.StartedAt.Equal(now) {
			t.Errorf("state: %+v %v", st, err)
		}
		if !claim(s, "b", now.Add(time.Minute), dead) {
			t.Error("a dead holder's pass is not run again at once")
		}
		if err := s.FinishPass(ctx, "snapshot", "a", now); err != nil { // the dead one's late finish changes nothing
			t.Fatal(err)
		}
		if st, _ := s.Pass(ctx, "snapshot"); st.Holder != "b" || !st.FinishedAt.IsZero() {
			t.Errorf("a holder that lost the pass finished it: %+v", st)
		}
		if err := s.FinishPass(ctx, "snapshot", "b", now.Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if claim(s, "c", now.Add(59*time.Minute), dead) {
			t.Error("claimed within the interval of the last start")
		}
		if !claim(s, "c", now.Add(61*time.Minute), alive) {
			t.Error("not claimed an interval after the last start")
		}
		if err := s.AbandonPass(ctx, "snapshot", "c"); err != nil {
			t.Fatal(err)
		}
		if !claim(s, "d", now.Add(62*time.Minute), alive) {
			t.Error("an abandoned pass is not run again at once")
		}
	})
}
