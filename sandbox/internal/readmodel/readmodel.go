// Package readmodel owns the answers assembled for readers of a sandbox
// root, beside the core: admission's answer before each run and its JSON
// without reflection, the report with its filters and orders, the storage
// overview with its cache and the walks its refreshes share, a project's
// storage in detail, the diff of two stored snapshots, the journal's query
// with its cursor and the news a follower reads of it (ReadJournal: the
// deletions, sweeps and walks a scrape counts), the usage history a chart
// draws, the trends a reader asks of one project or polls for every tree
// (FullAt, cached), a snapshot's tree without what was deleted since
// (gone.go), and the export of the trees to xfs_quota's files.
//
// It reads through a narrow surface of the core (Core, and the store the
// core opened): the figures are the core's (its Show, Report and read
// cache), and so is the rule that decides admission. It never opens a
// store or a backend, never writes a project, a limit or a setting, never
// journals but by asking the core to note the limits it saw (NoteLimits),
// and never walks but through the snapshot pass the facade hands it
// (Snapshot, an overview's refresh). It never imports a shell or another use case; the facade
// (package sandbox) is its only caller.
package readmodel

import (
	"context"
	"fmt"
	"time"

	"github.com/xfsq/xfsq/quota/xfs"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/sandbox/internal/core/trend"
	"github.com/xfsq/xfsq/settings"
	"github.com/xfsq/xfsq/store"
)

// Core is what the read model asks of the core: its clock and settings;
// the backend in force and why the kernel's could not be used; the
// projects, a project and a tree; every tree's figures (Report, and Usage
// as admission reads them) and what the snapshots add to them (growth and
// activity, full-in and reclaimable, the disk's trend); the disk's size;
// the kernel's quota interface (nil on the fallback), whose counters the
// space no tree holds is read from; the store's change mark; the limits a read saw
// reached, to be journalled; the hosts it knows; the ID registry's records
// of the root's filesystem.
type Core interface {
	Now() time.Time
	IsXFS() bool
	BackendName() string
	BackendInfo() core.Backend
	UnsupportedReason() (reason string, ok bool)
	Setting(ctx context.Context, key string) (settings.Value, error)

	List(ctx context.Context) ([]store.Project, error)
	Show(ctx context.Context, name string, r ...core.Read) (core.Project, error)
	Tree(ctx context.Context, name, a string) (store.Tree, error)
	Report(ctx context.Context, r ...core.Read) ([]core.TreeStatus, error)
	Usage(ctx context.Context) ([]core.TreeStatus, error)
	GrowthAndActivity(ctx context.Context, rows []core.TreeStatus) error
	Insight(ctx context.Context, rows []core.TreeStatus) error
	DiskTrend(ctx context.Context, total, free uint64, now time.Time) (trend.Trend, error)
	DiskSize() (total, free uint64, ok bool)
	Kernel() *xfs.FS
	ChangeMark(ctx context.Context) (store.ChangeMark, error)
	NoteLimits(ctx context.Context, rows []core.TreeStatus, seenBy string) error

	CheckHosts(ctx context.Context, names []string) error
	RegisteredIDs(ctx context.Context) ([]store.IDRecord, error)
}

// Model answers the readers of one root.
type Model struct {
	Core
	// Root is the sandbox root's absolute path; Store is the core's store.
	Root  string
	Store *store.Store
	// Snapshot is the one walk the read model asks for, an overview's
	// refresh (sandbox/internal/snapshots, handed over by the facade).
	Snapshot core.SnapshotFunc

	cache  overviewCache // the last overview assembled (Overview)
	fullAt fullAtCache   // when each tree fills at its trend, for pollers (insight.go)
}

// New is the read model of the root c manages.
func New(c *core.Manager, snapshot core.SnapshotFunc) *Model {
	return &Model{Core: c, Root: c.Root, Store: c.Store, Snapshot: snapshot}
}

func inputErrorf(format string, args ...any) error {
	return &core.InputError{Msg: fmt.Sprintf(format, args...)}
}

// fieldErrorf is bad input in one field: the message starts with its name.
func fieldErrorf(field, format string, args ...any) error {
	return &core.InputError{Msg: field + " " + fmt.Sprintf(format, args...), Param: field}
}
