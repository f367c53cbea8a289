package store

import (
	"errors"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/journal"
)

// byLease is the decision for holders of other machines: gone when the
// lease has expired or there is none.
func byLease(_ string, l HolderLease) (bool, string) {
	if !l.Found || l.Expired {
		return true, "its lease expired"
	}
	return false, ""
}

// machine opens dsn as one process of one machine, whose lease lasts expiry
// and is renewed every heartbeat.
func machine(t *testing.T, dsn, name string, heartbeat, expiry time.Duration) (*Store, Claim) {
	t.Helper()
	s := open(t, dsn)
	s.SetLiveness(Liveness{Process: "7.7@" + name, Machine: "boot-" + name, Heartbeat: heartbeat, Expiry: expiry})
	return s, Claim{Holder: "7.7@" + name + "/op-1", Actor: "op", Gone: byLease}
}

// A sweep lock held from another machine is taken over only once its
// holder's lease has expired, and journalled; the holder that lost it is
// fenced off at its next deletion, before its pending record.
func TestSweepLockTakenOverAfterExpiry(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		a, byA := machine(t, dsn, "ma", time.Hour, 1500*time.Millisecond) // never renewed
		b, byB := machine(t, dsn, "mb", time.Hour, time.Minute)
		if busy, err := a.LockSweep(ctx, "omni", byA); busy != "" || err != nil {
			t.Fatalf("first lock: %q %v", busy, err)
		}
		if busy, err := b.LockSweep(ctx, "omni", byB); busy != byA.Holder || err != nil {
			t.Fatalf("beside a live lease: busy %q (%v), want %s", busy, err, byA.Holder)
		}
		time.Sleep(1600 * time.Millisecond)
		if busy, err := b.LockSweep(ctx, "omni", byB); busy != "" || err != nil {
			t.Fatalf("after the lease expired: busy %q (%v)", busy, err)
		}
		evs, err := b.Events(ctx, EventFilter{Type: journal.TypeHolderTakenOver})
		if err != nil || len(evs) != 1 {
			t.Fatalf("takeover records: %v %v", evs, err)
		}
		p, _ := evs[0].Decode()
		if to := p.(journal.HolderTakenOver); to.From != byA.Holder || to.By != byB.Holder || to.What != "sweep_lock" || to.ExpiredAt.IsZero() {
			t.Errorf("the takeover's record: %+v", to)
		}
		rec := journal.Evicted{SweepID: "sw-a", Area: "cache", Path: "cache/omni/x", State: journal.StatePending, Holder: byA.Holder}
		_, err = a.AppendPendingUnlessLeased(ctx, "omni", "op", rec, time.Now())
		var lost *LockLostError
		if !errors.As(err, &lost) || lost.Holder != byB.Holder {
			t.Errorf("the late sweep's deletion: %v, want the lock lost to %s", err, byB.Holder)
		}
		if pending, _ := a.PendingEvictions(ctx); len(pending) != 0 {
			t.Errorf("a pending record was written by a sweep that lost its lock: %+v", pending)
		}
		rec.Holder, rec.SweepID = byB.Holder, "sw-b"
		if _, err := b.AppendPendingUnlessLeased(ctx, "omni", "op", rec, time.Now()); err != nil {
			t.Errorf("the lock's holder journals: %v", err)
		}
	})
}

// A heartbeat keeps a lease alive past its expiry; once it stops (the
// process is gone), the lease lapses and the lock is taken over.
func TestHeartbeatKeepsTheLease(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		a, byA := machine(t, dsn, "ma", 200*time.Millisecond, time.Second)
		b, byB := machine(t, dsn, "mb", time.Hour, time.Minute)
		if busy, err := a.LockSweep(ctx, "omni", byA); busy != "" || err != nil {
			t.Fatalf("first lock: %q %v", busy, err)
		}
		time.Sleep(2 * time.Second)
		if busy, err := b.LockSweep(ctx, "omni", byB); busy != byA.Holder || err != nil {
			t.Fatalf("beside a lease kept by its heartbeat: busy %q (%v)", busy, err)
		}
		a.Close() // the heartbeat stops
		time.Sleep(1100 * time.Millisecond)
		if busy, err := b.LockSweep(ctx, "omni", byB); busy != "" || err != nil {
			t.Fatalf("after the heartbeat stopped: busy %q (%v)", busy, err)
		}
	})
}

// A pass claimed on another machine is run again once its lease expires,
// and that is journalled.
func TestPassTakenOverAfterExpiry(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		a, byA := machine(t, dsn, "ma", time.Hour, time.Second)
		b, byB := machine(t, dsn, "mb", time.Hour, time.Minute)
		now := time.Now()
		if ok, _, err := a.ClaimPass(ctx, "snapshot", byA, now, time.Hour); !ok || err != nil {
			t.Fatalf("first claim: %v %v", ok, err)
		}
		if ok, _, _ := b.ClaimPass(ctx, "snapshot", byB, now, time.Hour); ok {
			t.Fatal("claimed beside a live lease")
		}
		time.Sleep(1100 * time.Millisecond)
		if ok, _, err := b.ClaimPass(ctx, "snapshot", byB, now, time.Hour); !ok || err != nil {
			t.Fatalf("after the lease expired: %v %v", ok, err)
		}
		if n := countEvents(t, b, journal.TypeHolderTakenOver); n != 1 {
			t.Errorf("%d takeover records, want 1", n)
		}
	})
}

// A deletion's confirmation finds its pending record whatever its path
// holds: a tenant's name that is not valid UTF-8 is stored with U+FFFD in
// its place, and the gate must key it the same way. A second
// confirmation of the same deletion is refused.
func TestConfirmPendingOfAnyName(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		rec := journal.Evicted{SweepID: "sw", Area: "cache", Path: "cache/omni/evil\x1b[2J\xff", State: journal.StatePending}
		if err := s.InTx(ctx, func(tx *Tx) error { return tx.AppendEvent(ctx, "omni", "op", rec) }); err != nil {
			t.Fatal(err)
		}
		rec.State = journal.StateDone
		if err := s.ConfirmPending(ctx, "omni", "op", rec); err != nil {
			t.Fatalf("the confirmation of a pending deletion: %v", err)
		}
		var settled *SettledElsewhereError
		if err := s.ConfirmPending(ctx, "omni", "op", rec); !errors.As(err, &settled) {
			t.Errorf("a second confirmation: %v, want SettledElsewhereError", err)
		}
		if pending, err := s.PendingEvictions(ctx); err != nil || len(pending) != 0 {
			t.Errorf("pending left: %+v %v", pending, err)
		}
	})
}
