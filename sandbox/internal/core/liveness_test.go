package core

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/store"
)

// holderGone decides by the kernel on this machine and by the lease
// elsewhere, never by pid@hostname alone.
func TestHolderGone(t *testing.T) {
	live, end := BeginOp(context.Background())
	defer end()
	ended, endIt := BeginOp(context.Background())
	endIt()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	deadHere := fmt.Sprintf("%d@%s/op-1", dead.Process.Pid, host)
	liveHere := fmt.Sprintf("%d@%s/op-1", os.Getppid(), host) // the test's parent runs
	elsewhere := "12.34@another-machine/op-1"
	me := store.HolderLease{Found: true, Machine: thisMachine()}
	other := store.HolderLease{Found: true, Machine: "another-boot/pid:[1]"}
	expired := other
	expired.Expired = true
	cases := []struct {
		name   string
		holder string
		lease  store.HolderLease
		gone   bool
	}{
		{"an operation of this process under way", HolderOf(live), store.HolderLease{}, false},
		{"an operation of this process that ended", HolderOf(ended), store.HolderLease{}, true},
		{"a process of this machine that runs", liveHere, me, false},
		{"a process of this machine that ended, its lease unexpired", deadHere, me, true},
		{"another machine's, its lease unexpired", elsewhere, other, false},
		{"another machine's, its lease expired", elsewhere, expired, true},
		{"another machine's, without a lease", elsewhere, store.HolderLease{}, true},
		{"this hostname's, without a lease (an older xfsq), running", liveHere, store.HolderLease{}, false},
		{"this hostname's, without a lease, ended", deadHere, store.HolderLease{}, true},
		// A container sharing this hostname in a pid namespace of its own:
		// its pid means nothing here, its lease decides.
		{"this hostname, another pid namespace, lease unexpired", deadHere, other, false},
	}
	for _, c := range cases {
		if gone, why := holderGone(c.holder, c.lease); gone != c.gone || gone == (why == "") {
			t.Errorf("%s: gone %v (%q), want %v", c.name, gone, why, c.gone)
		}
	}
}

// Two processes on one store as two machines (each with its own lease,
// never renewed here) racing for one project's sweep lock: exactly one
// holds it, and the other takes it over only once that one's lease expired.
func TestSweepLockAcrossMachines(t *testing.T) {
	ctx := context.Background()
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		machines := []struct {
			s     *store.Store
			claim store.Claim
		}{
			{machineStore(t, dsn, "7.7@machine-a"), store.Claim{Holder: "7.7@machine-a/op-1", Actor: "test", Gone: holderGone}},
			{machineStore(t, dsn, "8.8@machine-b"), store.Claim{Holder: "8.8@machine-b/op-1", Actor: "test", Gone: holderGone}},
		}
		busy := make([]string, 2)
		var wg sync.WaitGroup
		for i, m := range machines {
			wg.Go(func() {
				var err error
				if busy[i], err = m.s.LockSweep(ctx, "omni", m.claim); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if (busy[0] == "") == (busy[1] == "") {
			t.Fatalf("racing sweeps: busy %q and %q; want exactly one to proceed", busy[0], busy[1])
		}
		loser := machines[0]
		if busy[1] != "" {
			loser = machines[1]
		}
		if got, err := loser.s.LockSweep(ctx, "omni", loser.claim); got == "" || err != nil {
			t.Fatalf("taken over while the holder's lease runs: busy %q %v", got, err)
		}
		time.Sleep(1600 * time.Millisecond)
		if got, err := loser.s.LockSweep(ctx, "omni", loser.claim); got != "" || err != nil {
			t.Fatalf("after the holder's lease expired: busy %q %v", got, err)
		}
	})
}

func machineStore(t *testing.T, dsn, process string) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), dsn, "h")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.SetLiveness(store.Liveness{Process: process, Machine: process + "-boot", Heartbeat: time.Hour, Expiry: 1500 * time.Millisecond})
	return s
}

// A reservation's holder is judged as a lock's, but one without a lease on
// another hostname keeps its room until the reservation expires.
func TestReservationHolderGone(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	deadHere := fmt.Sprintf("%d@%s/op-1", dead.Process.Pid, host)
	elsewhere := "12.34@another-machine/op-1"
	other := store.HolderLease{Found: true, Machine: "another-boot/pid:[1]"}
	expired := other
	expired.Expired = true
	for _, c := range []struct {
		name   string
		holder string
		lease  store.HolderLease
		gone   bool
	}{
		{"another machine's, without a lease (an older xfsq)", elsewhere, store.HolderLease{}, false},
		{"another machine's, its lease unexpired", elsewhere, other, false},
		{"another machine's, its lease expired", elsewhere, expired, true},
		// A container sharing this hostname: its pid names another process here.
		{"this hostname, another pid namespace, lease unexpired", deadHere, other, false},
		{"this hostname, another pid namespace, lease expired", deadHere, expired, true},
		{"this hostname's, without a lease, ended", deadHere, store.HolderLease{}, true},
	} {
		if gone := HolderGone(c.holder, c.lease); gone != c.gone {
			t.Errorf("%s: gone %v, want %v", c.name, gone, c.gone)
		}
	}
}
