// Package writes owns the accounting of writes made through xfsq (the file
// layer's put, the HTTP upload): admission before a byte is allocated, the
// reservation of a streaming body and its growth and renewal, the commit to
// the fallback's ledger, its undo, and what a write that did not finish
// gives back (Write). It is what the file layer stands on: it implements
// files.Core over the core (Files), so that the layer reaches the store
// and the backend only through here.
//
// On the fallback backend each step is a transaction of the store, so two
// processes can never together pass a limit; on XFS the kernel is the
// reservation. It works over a narrow surface of the core (Core, and the
// store and backend the core opened): it never opens a store or a backend,
// deletes nothing but through the core (a reclaimed write's temporary file,
// a removal through the layer), credits removals only through the core's
// CreditRemoval (which retention's sweeps and doctor's repairs share), and
// never imports a shell or another use case. The facade (package sandbox)
// is its only caller.
package writes

import (
	"context"
	"time"

	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/store"
)

// Core is what the accounting of writes asks of the core: the clock, who
// acts, which backend is in force, a ready project's tree, the settings a
// write obeys, a fresh enough walk of a fallback tree before admission,
// the removal of reclaimed writes' temporary files, the credit of a
// removal, the journalled removal, and the walks of a sub-path the file
// layer makes.
type Core interface {
	Now() time.Time
	ActorOf(ctx context.Context) string
	IsXFS() bool
	Tree(ctx context.Context, name, a string) (store.Tree, error)
	WriteSettings(ctx context.Context) (core.WriteSettings, error)
	RefreshBaselineIfStale(ctx context.Context, t store.Tree) error
	RemoveTemps(ctx context.Context, reclaimed []store.Reservation)
	RemovalCutoff(ctx context.Context, t store.Tree) (time.Time, error)
	CreditRemoval(ctx context.Context, t store.Tree, freed quota.Usage, uncounted []saferm.Freed, started time.Time) error
	RemoveJournalled(ctx context.Context, project string, parent *saferm.Dir, name string, rec deletion.Record, o saferm.Options) (deletion.Record, saferm.Report, error)
	WalkProgress(t store.Tree, report func(core.TreeProgress)) func(inventory.Progress)
	WalkIn(t store.Tree, rel string, opts inventory.Options) (*inventory.Result, error)
}

// Writes accounts the writes into one root's trees.
type Writes struct {
	Core
	// Root is the sandbox root's absolute path; Store and Backend are the
	// core's.
	Root    string
	Store   *store.Store
	Backend quota.Backend
	// Top is top's walk of a whole tree (sandbox/internal/snapshots), which
	// the file layer answers with; the facade hands it over.
	Top func(ctx context.Context, name, area string, opts inventory.Options) (*inventory.Result, error)
}

// New is the accounting of writes of the root c manages, with top's walk
// of a whole tree.
func New(c *core.Manager, top func(ctx context.Context, name, area string, opts inventory.Options) (*inventory.Result, error)) *Writes {
	return &Writes{Core: c, Root: c.Root, Store: c.Store, Backend: c.Backend, Top: top}
}
