package core

import (
	"context"
	"os"
	"strings"
	"sync"

	"github.com/xfsq/xfsq/store"
)

// Liveness across machines: a holder of this process is alive while its
// operation is registered (op.go); one of another process on this machine
// (the same kernel boot and pid namespace) while that process runs; one
// elsewhere while the lease its process holds in the store (store.Liveness,
// renewed by a heartbeat) has not expired by the database's clock. Never by
// pid@hostname alone: another machine, or a container restarted under a new
// hostname, cannot be asked of this kernel.

// thisMachine names this kernel's boot and this process's pid namespace:
// within one, a pid and its start time name one process.
var thisMachine = sync.OnceValue(func() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, nerr := os.Readlink("/proc/self/ns/pid")
	if err != nil || nerr != nil {
		return "" // unknown: no holder is taken for this machine's
	}
	return strings.TrimSpace(string(boot)) + "/" + ns
})

// holderGone is the one liveness decision, given the lease of the
// holder's process: whether it has stopped, and why.
func holderGone(h string, l store.HolderLease) (bool, string) {
	proc, op, hasOp := strings.Cut(h, "/")
	switch {
	case proc == processHolder():
		if !hasOp {
			return false, ""
		}
		if _, live := ops.Load(op); live {
			return false, ""
		}
		return true, "its operation in this process ended"
	case l.Found && l.Machine != "" && l.Machine == thisMachine(), !l.Found && onThisHostname(proc):
		// The kernel knows: a crashed process is taken over at once, not
		// an expiry later. Without a lease, a holder written by an older
		// xfsq on this hostname is asked as it always was.
		if processRuns(proc) {
			return false, ""
		}
		return true, "its process no longer runs"
	case !l.Found:
		return true, "it holds no lease in the store (written by an older xfsq, or its lease expired long ago)"
	case l.Expired:
		return true, "its lease expired"
	}
	return false, ""
}

// openLiveness configures the store's lease for this process, with the
// holder_heartbeat and holder_expiry settings unless o gives them.
func (m *Manager) openLiveness(ctx context.Context, o Options) error {
	l := o.Liveness
	if l.Heartbeat == 0 || l.Expiry == 0 {
		v, err := m.settingsOf(ctx, "holder_heartbeat", "holder_expiry")
		if err != nil {
			return err
		}
		l.Heartbeat, l.Expiry = v["holder_heartbeat"].Duration(), v["holder_expiry"].Duration()
	}
	// A lease renewed less than thrice per expiry lapses on one late beat.
	l.Heartbeat = min(l.Heartbeat, l.Expiry/3)
	l.Process, l.Machine = processHolder(), thisMachine()
	m.Store.SetLiveness(l)
	return nil
}

// claim is the caller's operation claiming a lock or a pass.
func (m *Manager) claimFor(ctx context.Context) store.Claim {
	return store.Claim{Holder: HolderOf(ctx), Actor: m.actor(ctx), Gone: holderGone}
}

// holderLive reports whether the operation h names may still be under way,
// reading its lease; in doubt (the store does not answer), it is.
func (m *Manager) holderLive(ctx context.Context, h string) bool {
	if h == "" {
		return false
	}
	var l store.HolderLease
	if store.ProcessOf(h) != processHolder() {
		var err error
		if l, err = m.Store.HolderLease(ctx, h); err != nil {
			return true
		}
	}
	gone, _ := holderGone(h, l)
	return !gone
}
