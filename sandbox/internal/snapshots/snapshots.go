// Package snapshots owns the walks xfsq keeps: the snapshot command and
// the scheduled pass (snapshot.go: the trees chosen, walked a few at once
// at background priority for a pass, stored in batches within a window,
// the fallback's baseline set by each complete walk, the one
// storage.snapshot event of a pass) and top's walk of one tree, which on
// the fallback becomes its baseline too.
//
// It works over a narrow surface of the core (Core, and the store the core
// opened) and walks through the core's walker beneath it
// (sandbox/internal/core/treewalk): it never opens a store or a backend,
// never writes but the walks, their baselines and the pass's event, and
// never imports a shell or another use case. The facade (package sandbox)
// is its only caller, and hands the pass to the use cases that ask for a
// walk (retention's scheduled pass, doctor, the read model's overview
// refresh) as a core.SnapshotFunc.
package snapshots

import (
	"context"
	"fmt"
	"time"

	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/quota/xfs"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/sandbox/internal/core/treewalk"
	"github.com/xfsq/xfsq/settings"
	"github.com/xfsq/xfsq/store"
)

// Core is what the walks ask of the core: the clock, the setting that
// keeps snapshots, who acts, a tree by name, the progress of a walk named
// by its tree, the kernel's counts (nil on the fallback), and the crossings
// a walk's figures show.
type Core interface {
	Now() time.Time
	Setting(ctx context.Context, key string) (settings.Value, error)
	ActorOf(ctx context.Context) string
	Tree(ctx context.Context, name, a string) (store.Tree, error)
	WalkProgress(t store.Tree, report func(core.TreeProgress)) func(inventory.Progress)
	Kernel() *xfs.FS
	NoteWalked(ctx context.Context, trees []store.Tree, area string) error
}

// Snapshots walks the trees of one root and keeps the walks.
type Snapshots struct {
	Core
	// Root is the sandbox root's absolute path; Store is the core's store.
	Root  string
	Store *store.Store

	xfs    *xfs.FS // the kernel's counts, nil on the fallback
	walker *treewalk.Walker
}

// New is the walks of the root c manages.
func New(c *core.Manager) *Snapshots {
	return &Snapshots{Core: c, Root: c.Root, Store: c.Store, xfs: c.Kernel(), walker: &treewalk.Walker{Root: c.Root}}
}

func (m *Snapshots) now() time.Time { return m.Now() }

// fieldErrorf is bad input in one field: the message starts with its name.
func fieldErrorf(field, format string, args ...any) error {
	return &core.InputError{Msg: field + " " + fmt.Sprintf(format, args...), Param: field}
}

// walkRoot is the root opened once for a batch's walks.
type walkRoot = treewalk.Root

func (m *Snapshots) openWalkRoot() (walkRoot, error) { return m.walker.OpenRoot() }

func (m *Snapshots) walkTreeIn(root walkRoot, t store.Tree, opts inventory.Options) (*inventory.Result, error) {
	return m.walker.WalkTreeIn(root, t, opts)
}

func (m *Snapshots) walkTree(t store.Tree, opts inventory.Options) (*inventory.Result, error) {
	return m.walker.WalkTree(t, opts)
}

// inProgress is a walk's Writing for the walker.
func inProgress(w store.Walk) map[string]inventory.InProgress { return treewalk.InProgress(w) }

// walkSeen is what a walk's result may have missed.
func walkSeen(res *inventory.Result) store.WalkSeen { return treewalk.Seen(res) }
