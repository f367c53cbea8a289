// Package sandbox is the one service a shell holds for a sandbox root: it
// opens one (OpenRoot: the root checked first, then the store, then the
// quota backend, all owned and closed together by Root) and answers every
// operation on it — init, project add/set/rm, check, show, report,
// snapshot, sweep, leases, settings, the journal's query, doctor, export,
// health's store part — and hands out the file layer (Files). The CLI and
// the HTTP server are shells over it: each maps its input to one call here
// and encodes the answer, so they can never disagree.
//
// It is a facade: the work is done in sandbox/internal/core (the state a
// root's operations share: the store, the quota backend, operations) and
// the use cases beside it (the projects' lifecycle, the walks kept as
// snapshots, retention, doctor, the read model, the fleet view, the
// accounting of writes that the file layer stands on, the change of a
// setting). A use case never imports another: where one is made of
// another's operations (doctor repairs an interrupted add or removal as
// the lifecycle undoes or finishes it; retention's pass, doctor and the overview walk with the
// snapshot pass; the file layer's top is top's walk), newManager hands
// them over. Go's internal rule keeps every package outside sandbox/ from
// importing those, and nothing here exports the store or the backend: a
// shell cannot reach past the calls that journal and check. It must never decide anything
// itself, only delegate, and never name a shell's flags in its messages.
package sandbox

import (
	"context"

	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/sandbox/internal/doctor"
	"github.com/xfsq/xfsq/sandbox/internal/fleet"
	"github.com/xfsq/xfsq/sandbox/internal/lifecycle"
	"github.com/xfsq/xfsq/sandbox/internal/readmodel"
	"github.com/xfsq/xfsq/sandbox/internal/retention"
	"github.com/xfsq/xfsq/sandbox/internal/settingwrites"
	"github.com/xfsq/xfsq/sandbox/internal/snapshots"
	"github.com/xfsq/xfsq/sandbox/internal/writes"
	"github.com/xfsq/xfsq/store"
)

// Manager runs the operations of one sandbox root (its methods are in
// core.go). It holds no store and no backend a caller could reach.
type Manager struct {
	// Root is the sandbox root's absolute path.
	Root     string
	c        *core.Manager
	projects *lifecycle.Lifecycle
	sweeps   *retention.Sweeper
	doctor   *doctor.Doctor
	reads    *readmodel.Model
	fleet    *fleet.Fleet
	writes   *writes.Writes
	snaps    *snapshots.Snapshots
	settings *settingwrites.Writes
}

func newManager(c *core.Manager) *Manager {
	projects := lifecycle.New(c)
	repairs := doctor.Projects{
		RollbackAdd: projects.RollbackAdd,
		FinishRemove: func(ctx context.Context, name string) error {
			_, err := projects.Remove(ctx, name, lifecycle.RemoveOptions{})
			return err
		},
	}
	// The snapshot pass is handed to each use case that walks with it, and
	// top's walk to the file layer's accounting.
	snaps := snapshots.New(c)
	return &Manager{Root: c.Root, c: c, projects: projects, sweeps: retention.New(c, snaps.Snapshot), doctor: doctor.New(c, repairs, snaps.Snapshot),
		reads: readmodel.New(c, snaps.Snapshot), writes: writes.New(c, snaps.Top), fleet: fleet.New(c), snaps: snaps, settings: settingwrites.New(c)}
}

// Files is the file layer of the root, for listing, reading and removing;
// Layer.ForWrites gives it the write settings in force for a write.
func (m *Manager) Files() *files.Layer { return m.writes.Files() }

// Root is an open sandbox root: its store and its manager, owned together.
type Root struct {
	*Manager
	// Init is what init found and made (Config.Init only).
	Init *InitResult
	// Note is what the caller should tell the operator about how the root
	// was opened (e.g. the store is read-only on a full disk); "" when nothing.
	Note string

	r *core.Root
}

// OpenRoot opens the root cfg names: the root first (it must exist, and
// be initialised unless cfg.Init), then the store (created only by init),
// then the backend.
func OpenRoot(ctx context.Context, cfg Config) (*Root, error) {
	r, err := core.OpenRoot(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Root{Manager: newManager(r.Manager), Init: r.Init, Note: r.Note, r: r}, nil
}

// Close closes the manager and the store and puts back the local store's
// reserve, so that the next full disk still has room to journal a delete.
func (r *Root) Close() error { return r.r.Close() }

// Open opens the manager of an initialised root over a store the caller
// opened and owns (library tests; shells use OpenRoot).
func Open(ctx context.Context, o Options) (*Manager, error) {
	c, err := core.Open(ctx, o)
	if err != nil {
		return nil, err
	}
	return newManager(c), nil
}

// Init creates the root's layout over a store the caller opened and owns
// (library tests; shells use OpenRoot with Config.Init); it is idempotent.
func Init(ctx context.Context, o Options) (*Manager, InitResult, error) {
	c, res, err := core.Init(ctx, o)
	if err != nil {
		return nil, res, err
	}
	return newManager(c), res, nil
}

// TestStore is m's store, for library tests that plant or read what no
// operation does (a ledger row, a pending eviction). No shell may call it:
// internal/layering's TestShellsReachNoStore holds that.
func TestStore(m *Manager) *store.Store { return m.c.Store }
