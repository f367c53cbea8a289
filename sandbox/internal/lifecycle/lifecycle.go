// Package lifecycle owns a project's coming and going: project add (every
// area's tree, its ID and limits, in one claim that an interrupted add
// leaves for the next add, remove or doctor to roll back), project rm
// (leases, the trees' limits, a purge journalled deletion by deletion, the
// IDs released once no file carries them) and the rollback of an add left
// half-way; and the leases a run holds on a project while it works in it
// (which a sweep respects and a removal refuses to break without force).
//
// It works over a narrow surface of the core (Core, and the store and
// backend the core opened): it never opens a store or a backend, makes a
// tree only through the core's own tree-making (the one init and doctor's
// repairs use), deletes only through the core's journalled removal, rolls
// back only empty directories it made, and never imports a shell or another
// use case. The facade (package sandbox) is its only caller, and hands
// doctor the rollback and the removal its repairs are made of.
package lifecycle

import (
	"context"
	"path/filepath"
	"time"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/store"
)

// Core is what lifecycle asks of the core: the clock and who
// acts, whether an operation still runs, the limits a tree may take, the
// trees' IDs, rows, directories and baselines, a project's view, and the
// journalled removal a purge deletes through.
type Core interface {
	Now() time.Time
	ActorOf(ctx context.Context) string
	HolderLive(ctx context.Context, h string) bool
	ClaimFor(ctx context.Context) store.Claim
	IsXFS() bool
	BackendName() string
	CheckLimits(area string, l quota.Limits) error
	ExcludedIDs() (map[quota.ProjectID]bool, error)
	RecordProject(ctx context.Context, tx *store.Tx, name, adder string, created time.Time, limits func(core.StoredSettings) (map[string]quota.Limits, error), excluded map[quota.ProjectID]bool) ([]store.Tree, store.Project, bool, error)
	PlaceTree(tree store.Tree) error
	MeasureNew(trees ...store.Tree) ([]store.WalkRecord, error)
	IDsStillUsed(trees []store.Tree) (map[quota.ProjectID]bool, error)
	Show(ctx context.Context, name string, r ...core.Read) (core.Project, error)
	Status(ctx context.Context, trees []store.Tree, all []quota.Quota, r core.Read) ([]core.TreeStatus, error)
	StatusOfReads(trees []store.Tree, reads []store.TreeRead, grace time.Duration) []core.TreeStatus
	BackendInfo() core.Backend
	RemoveJournalled(ctx context.Context, project string, parent *saferm.Dir, name string, rec deletion.Record, o saferm.Options) (deletion.Record, saferm.Report, error)
}

// Lifecycle adds and removes the projects of one root.
type Lifecycle struct {
	Core
	// Root is the sandbox root's absolute path; Store and Backend are the
	// core's.
	Root    string
	Store   *store.Store
	Backend quota.Backend
	// rollbackUndone, when set (tests), is called as RollbackAdd has
	// undone an add's limits and directories, before it deletes its rows.
	rollbackUndone func()
	// beforePlace, when set (tests), is called before each tree an add
	// places.
	beforePlace func()
}

// New is the lifecycle of the projects of the root c manages.
func New(c *core.Manager) *Lifecycle {
	return &Lifecycle{Core: c, Root: c.Root, Store: c.Store, Backend: c.Backend}
}

func (l *Lifecycle) abs(rel string) string { return filepath.Join(l.Root, rel) }

// What lifecycle journals, as the journal's payloads state it (see the
// core's payloads.go).

func addedPayload(backend string, trees []store.Tree) journal.ProjectAdded {
	return journal.ProjectAdded{Backend: backend, Trees: each(trees, func(t store.Tree) journal.Tree {
		return journal.Tree{Project: t.Project, Area: t.Area, Path: t.Path, Backend: t.Backend, FSUUID: t.FSUUID,
			ProjectID: uint32(t.ProjectID), Limits: core.LimitsPayload(t.Limits)}
	})}
}

func removedPayload(r RemoveResult) journal.ProjectRemoved {
	return journal.ProjectRemoved{Project: r.Project, Purged: r.Purged, Forced: r.Forced, HeldLeases: r.HeldLeases,
		EndedLeases: r.EndedLeases, KeptIDs: r.KeptIDs, Left: r.Left,
		PurgedTrees: each(r.PurgedTrees, func(t Purged) journal.PurgedTree {
			return journal.PurgedTree{Path: t.Path, State: t.State, Entries: t.RemovedEntries, Bytes: t.FreedBytes, Inodes: t.FreedInodes,
				Left: each(t.Left, func(l apiv1.Left) journal.Left { return journal.Left(l) })}
		})}
}

// each is f of every element of in; nil stays nil, as JSON's null does.
func each[T, U any](in []T, f func(T) U) []U {
	if in == nil {
		return nil
	}
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

// notFound is the core's refusal of a project it does not know.
func notFound(name string) error { return core.NotFound(name) }
