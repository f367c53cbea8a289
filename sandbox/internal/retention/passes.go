package retention

import (
	"context"
	"fmt"
	"time"

	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/sandbox/internal/core"
)

// The scheduled passes of a long-lived process (xfsq serve): each has an
// interval setting, runs at most once per interval and one at a time per
// host across every process sharing the store (a pass row in the store,
// claimed by its operation, as a sweep lock is), is run again at once when
// the process running it died, and runs on threads of its own at
// background priority. They live here, not in the server, because nothing
// in them is HTTP: any shell may drive them, and only the library reaches
// the store.
const (
	// PassSnapshot walks every tree and journals one storage.snapshot
	// event (snapshot_interval).
	PassSnapshot = "snapshot"
	// PassSweep sweeps every ready project, and the root's inbound tree
	// (inbound_ttl), by policy and journals one
	// storage.swept event (sweep_interval; 0, the default, is off).
	PassSweep = "sweep"
)

// Passes lists the scheduled passes, in the order a scheduler runs them.
var Passes = []string{PassSnapshot, PassSweep}

var passInterval = map[string]string{PassSnapshot: "snapshot_interval", PassSweep: "sweep_interval"}

// PassOutcome is what RunPass did, or why it did nothing.
type PassOutcome struct {
	Pass string `json:"pass"`
	Ran  bool   `json:"ran"`
	// Why it did not run: switched off, not due, run by another process.
	Why      string        `json:"why,omitempty"`
	Interval time.Duration `json:"-"`
	// NextAt is when it is next due (zero: switched off); a scheduler
	// sleeps until then, or a tick, whichever comes first.
	NextAt    time.Time           `json:"next_at,omitzero"`
	Snapshots []core.TreeSnapshot `json:"snapshots,omitempty"`
	Sweep     *SweepOutcome       `json:"sweep,omitempty"`
}

// RunPass runs the scheduled pass named pass if it is due, and says what
// it did. A pass stops between entries (trees, deletions) when ctx is
// cancelled and then journals nothing; it is run again whole, at once, by
// the next RunPass, as one whose process died is.
func (m *Sweeper) RunPass(ctx context.Context, pass string) (PassOutcome, error) {
	out := PassOutcome{Pass: pass}
	key, ok := passInterval[pass]
	if !ok {
		return out, inputErrorf("unknown pass %q: use %s or %s", pass, PassSnapshot, PassSweep)
	}
	iv, err := m.Setting(ctx, key)
	if err != nil {
		return out, err
	}
	if out.Interval = iv.Duration(); out.Interval <= 0 {
		out.Why = key + " is 0: switched off"
		return out, nil
	}
	ctx, end := core.BeginOp(ctx)
	defer end()
	holder, now := core.HolderOf(ctx), m.Now()
	claimed, st, err := m.Store.ClaimPass(ctx, pass, m.ClaimFor(ctx), now, out.Interval)
	if err != nil {
		return out, err
	}
	if !claimed {
		if st.Holder != "" {
			out.Why, out.NextAt = "being run by "+st.Holder, now.Add(out.Interval)
		} else {
			out.Why, out.NextAt = fmt.Sprintf("not due: last run at %s, every %s", st.StartedAt.Format(time.RFC3339), iv.Value), st.StartedAt.Add(out.Interval)
		}
		return out, nil
	}
	// The whole pass, its planning walks and store writes too, on a
	// thread of its own: the caller's keeps its priority.
	var runErr error
	inventory.Background(func() { runErr = m.runPass(ctx, &out) }) // best effort: a pass at normal priority still runs
	if runErr != nil {
		m.Store.AbandonPass(context.WithoutCancel(ctx), pass, holder)
		return out, runErr
	}
	out.Ran, out.NextAt = true, now.Add(out.Interval)
	return out, m.Store.FinishPass(context.WithoutCancel(ctx), pass, holder, m.Now())
}

func (m *Sweeper) runPass(ctx context.Context, out *PassOutcome) error {
	switch out.Pass {
	case PassSnapshot:
		snaps, err := m.Snapshot(ctx, core.SnapshotOptions{Scheduled: true, Walk: inventory.Options{RawStat: true}})
		out.Snapshots = snaps
		if err != nil {
			return err
		}
		return m.pruneJournal(ctx)
	case PassSweep:
		res, err := m.Sweep(ctx, SweepOptions{Background: true})
		out.Sweep = &res
		return err
	}
	return nil
}

// pruneJournal prunes this host's journal to journal_retention (0: off),
// after a snapshot pass: once per interval, by one process of the host.
func (m *Sweeper) pruneJournal(ctx context.Context) error {
	v, err := m.Setting(ctx, "journal_retention")
	if err != nil || v.Duration() <= 0 {
		return err
	}
	_, err = m.Store.PruneEvents(ctx, m.Now().Add(-v.Duration()), v.Value, core.ActorFrom(ctx), 0)
	return err
}
