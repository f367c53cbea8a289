// Package retention owns what deletes by policy: a sweep's orchestration
// (one project at a time under its sweep lock, the quota check, the
// executor with its journal), the reviewed plan in its two encodings (kept
// in the store, applied by id or by file, checked as a whole and re-decided
// entry by entry) and the scheduled passes of a long-lived process.
//
// It works over a narrow surface of the core (Core, and the store the core
// opened): it never opens a store or a backend, never deletes but through
// the sweep executor's journalled deletion, never deletes without the
// pending record committed first, and never imports a shell or another use
// case. The facade (package sandbox) is its only caller.
package retention

import (
	"context"
	"fmt"
	"time"

	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/settings"
	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/sweep"
)

// Core is what retention asks of the core: the clock, the settings, who
// acts and holds, the trees and their figures, the fallback's accounting
// of a deletion, and the journal's deletion records.
type Core interface {
	Now() time.Time
	Setting(ctx context.Context, key string) (settings.Value, error)
	Settings(ctx context.Context) ([]settings.Value, error)
	ActorOf(ctx context.Context) string
	ClaimFor(ctx context.Context) store.Claim
	IsXFS() bool
	Tree(ctx context.Context, name, a string) (store.Tree, error)
	InboundTree(ctx context.Context) (store.Tree, bool, error)
	Status(ctx context.Context, trees []store.Tree, all []quota.Quota, r core.Read) ([]core.TreeStatus, error)
	RemovalCutoff(ctx context.Context, t store.Tree) (time.Time, error)
	CreditRemoval(ctx context.Context, t store.Tree, freed quota.Usage, uncounted []saferm.Freed, started time.Time) error
	JournalEviction(ctx context.Context, project string, rec deletion.Record) error
	ResolvePending(ctx context.Context, root *saferm.Dir) (int, error)
	SweepUsage(ctx context.Context, names []string) (map[string]core.TreeStatus, map[string]string, error)
	NoteSweepOverSoft(ctx context.Context, overs []sweep.OverSoft, sweepID string) error
}

// Sweeper runs the sweeps and passes of one root.
type Sweeper struct {
	Core
	// Root is the sandbox root's absolute path; Store is the core's store.
	Root  string
	Store *store.Store
	// Snapshot is the snapshot pass (sandbox/internal/snapshots) a
	// scheduled pass walks with, handed over by the facade.
	Snapshot core.SnapshotFunc
}

// New is the sweeper of the root c manages, walking its scheduled passes
// with snapshot.
func New(c *core.Manager, snapshot core.SnapshotFunc) *Sweeper {
	return &Sweeper{Core: c, Root: c.Root, Store: c.Store, Snapshot: snapshot}
}

func inputErrorf(format string, args ...any) error {
	return &core.InputError{Msg: fmt.Sprintf(format, args...)}
}

// sweptPayload is the storage.swept record of a sweep.
func sweptPayload(res sweep.Result, projects []string, planID string) journal.Swept {
	var skipped []journal.Skip
	if res.Skipped != nil {
		skipped = make([]journal.Skip, len(res.Skipped))
		for i, s := range res.Skipped {
			skipped[i] = journal.Skip{Project: s.Project, Path: s.Path, Reason: s.Reason}
		}
	}
	return journal.Swept{SweepID: res.SweepID, FreedBytes: res.BytesFreed, EvictedEntries: len(res.Evicted), PerPolicy: res.PerPolicy,
		DurationSeconds: res.Duration.Seconds(), Projects: projects, PlanID: planID, Skipped: skipped}
}
