// Package treewalk walks a tree of a sandbox root as the root's own
// filesystem holds it, beneath the core that calls it: beneath the
// tenant's mounts where the process may copy the root's mount (and as a
// floor that credits nothing where it may not), through no symlink, never
// out of the root. It owns the opening of a tree for a walk (walktree.go),
// the measure of a tree for the fallback's baseline, and what a walk may
// have missed (store.WalkSeen); the core's baselines, the snapshot pass,
// top and the file layer's walk of a sub-path all walk through it.
//
// It must never import the core (which calls it), a use case or the
// facade; it records nothing: its callers store the walks.
package treewalk

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store"
)

// Walker walks the trees of the sandbox root at Root (an absolute path).
type Walker struct {
	Root string
}

func (m *Walker) abs(rel string) string { return filepath.Join(m.Root, rel) }

// Root is the sandbox root opened once for the walks of many trees
// (OpenRoot): in a copy of its mount without its submounts where one can
// be made. Close it when they are done.
type Root = walkRoot

// OpenRoot opens the root for WalkTreeIn (see openWalkRoot).
func (m *Walker) OpenRoot() (Root, error) { return m.openWalkRoot() }

// WalkTree walks t's whole directory beneath the tenant's mounts.
func (m *Walker) WalkTree(t store.Tree, opts inventory.Options) (*inventory.Result, error) {
	return m.walkTree(t, opts)
}

// WalkTreeIn is WalkTree in a root already open (OpenRoot); safe to call
// at once from several goroutines.
func (m *Walker) WalkTreeIn(root Root, t store.Tree, opts inventory.Options) (*inventory.Result, error) {
	return m.walkTreeIn(root, t, opts)
}

// MeasureTree measures t's directory for a baseline (see measureTree).
func (m *Walker) MeasureTree(t store.Tree, writing map[string]inventory.InProgress) (quota.Usage, store.WalkSeen, error) {
	return m.measureTree(t, writing)
}

// Measure is one tree's measure (MeasureTrees).
type Measure struct {
	Usage quota.Usage
	Seen  store.WalkSeen
}

// MeasureTrees measures each of ts, none with a write in flight, as
// MeasureTree does, in one opening of the root: a new project's three
// trees made and dissolved three copies of its mount (~1 ms each).
func (m *Walker) MeasureTrees(ts []store.Tree) ([]Measure, error) {
	out := make([]Measure, len(ts))
	root, err := m.openWalkRoot()
	if errors.Is(err, os.ErrNotExist) { // as measureTree: no tree there, each empty
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer root.Close()
	for i, t := range ts {
		if out[i].Usage, out[i].Seen, err = m.measureTreeIn(root, t, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// InProgress is a walk's writes in flight as the walker takes them.
func InProgress(w store.Walk) map[string]inventory.InProgress { return inProgress(w) }

// Seen is what a walk's result may have missed.
func Seen(res *inventory.Result) store.WalkSeen { return walkSeen(res) }

// cleaner is a testing.TB's Cleanup, so that this package does not import
// testing.
type cleaner interface{ Cleanup(func()) }

// CannotClone makes every walk find that the root's mount cannot be
// copied without its submounts (no CAP_SYS_ADMIN), until t ends.
func CannotClone(t cleaner) {
	was := beneath
	beneath = func(string) (*saferm.Dir, error) { return nil, saferm.ErrCannotClone }
	t.Cleanup(func() { beneath = was })
}

// The walks of a snapshot pass (and of the core's fresh baselines,
// SweepUsage's) are stored in batches (store.BeginWalks and
// StoreWalks): a constant number of statements a batch, where a tree
// cost ~19. A batch reads its trees' writes in flight once, before its
// first walk, so a write committed before a later tree's walk is counted
// twice until that tree's next walk (an over-count, never an
// under-count): BatchWindow bounds how long a batch begins walks,
// and so that window; BatchMax bounds its statements' size.
var (
	BatchMax    = 500
	BatchWindow = time.Second
)
