package core

import (
	"context"
	"time"

	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store"
)

// The credit of a removal through xfsq on the fallback's ledger. It stays
// in the core, not with the accounting of writes (sandbox/internal/writes):
// retention's sweeps, the core's removal of a write's temporary file
// (doctor's and a reclaim's) and the file layer's rm all credit what they
// remove, and what use cases share is the core's.

// CreditRemoval lowers a fallback tree's ledger by what a removal through
// xfsq freed (on XFS the kernel counts). freed must be what was unlinked
// and the last walk counted, never more, so the ledger over-counts, never
// under-counts. started is when the removal began: a walk that ended after
// it may have seen it.
//
// uncounted is what the removal freed that the walk did not count
// (saferm.Report.Uncounted): each is credited what its own write through
// xfsq since the walk counted, if it was written so, else nothing.
func (m *Manager) CreditRemoval(ctx context.Context, t store.Tree, freed quota.Usage, uncounted []saferm.Freed, started time.Time) error {
	if m.IsXFS() || (freed.Bytes == 0 && freed.Inodes == 0 && len(uncounted) == 0) {
		return nil
	}
	inodes := make([]store.Freed, len(uncounted))
	for i, f := range uncounted {
		inodes[i] = store.Freed{Ino: f.Ino, Bytes: f.Bytes}
	}
	return m.Store.Removed(ctx, store.TreeKey{Project: t.Project, Area: t.Area}, freed, inodes, m.ActorOf(ctx), started)
}

// RemovalCutoff is the CountChangedBefore a removal from t credited with
// CreditRemoval passes to saferm: on the fallback, when the tree's last
// walk began. An inode changed after that may hold bytes the walk never
// saw (a tenant grew it outside xfsq), so crediting it could take the
// ledger below a fresh walk; it is credited nothing. That also credits
// nothing for files written through xfsq since the walk, which are in the
// ledger: the ledger then over-counts them until the next walk, the safe
// side. A tree never walked credits nothing, nor one whose last walk met
// mount points it could not look beneath (store.WalkSeen.Hidden): what was
// under them looks walked once they go. On XFS it is zero: count all.
//
// The kernel stamps ctime from its coarse clock, which lags the clock the
// walk's start was read from by up to a tick: a change just after the
// start may carry a ctime just before it. The cutoff is that much earlier.
func (m *Manager) RemovalCutoff(ctx context.Context, t store.Tree) (time.Time, error) {
	if m.IsXFS() {
		return time.Time{}, nil
	}
	last, err := m.Store.Baseline(ctx, store.TreeKey{Project: t.Project, Area: t.Area})
	if err != nil || last.At.IsZero() || last.Hidden {
		return time.Unix(0, 1), err // before any ctime: nothing counts
	}
	return last.At.Add(-CtimeLag), nil
}

// CtimeLag bounds how far the kernel's ctime stamps lag the real-time
// clock (one tick of its coarse clock: 10 ms at HZ=100), with room to spare.
const CtimeLag = 50 * time.Millisecond
