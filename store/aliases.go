package store

import (
	"context"
	"time"

	"github.com/xfsq/xfsq/store/internal/base"
	"github.com/xfsq/xfsq/store/internal/eventlog"
	"github.com/xfsq/xfsq/store/internal/holders"
	"github.com/xfsq/xfsq/store/internal/migrations"
	"github.com/xfsq/xfsq/store/internal/registry"
	"github.com/xfsq/xfsq/store/internal/sweeps"
	"github.com/xfsq/xfsq/store/internal/walks"
)

// The store's vocabulary declared beneath it (store/internal/...), named
// here so that callers speak only store. Each is documented where it is
// declared.

type (
	// UnreachableError is a PostgreSQL store this process cannot reach now.
	UnreachableError = base.UnreachableError
	// Lock is a mutex whose LockWithin wait is bounded by a request's budget.
	Lock = base.Lock
)

// WithBudget is ctx whose store calls together wait at most d.
func WithBudget(ctx context.Context, d time.Duration) context.Context { return base.WithBudget(ctx, d) }

// BudgetLeft is what is left of ctx's budget, and whether it has one.
func BudgetLeft(ctx context.Context) (time.Duration, bool) { return base.BudgetLeft(ctx) }

// SchemaTooNewError is a database whose schema needs a newer xfsq.
type SchemaTooNewError = migrations.SchemaTooNewError

// SchemaVersion is the schema version this binary migrates to.
func SchemaVersion() int { return migrations.SchemaVersion() }

type (
	Claim            = holders.Claim
	Gone             = holders.Gone
	HolderLease      = holders.HolderLease
	LeaseLapsedError = holders.LeaseLapsedError
	Liveness         = holders.Liveness
)

const (
	DefaultExpiry    = holders.DefaultExpiry
	DefaultHeartbeat = holders.DefaultHeartbeat
)

var (
	ProcessOf = holders.ProcessOf
)

type (
	ChangeMark = registry.ChangeMark
	IDRecord   = registry.IDRecord
	Project    = registry.Project
	Tree       = registry.Tree
)

const (
	RootOwner     = registry.RootOwner
	StateAdding   = registry.StateAdding
	StateReady    = registry.StateReady
	StateRemoving = registry.StateRemoving
)

type (
	DeletionTotal  = eventlog.DeletionTotal
	EventFilter    = eventlog.EventFilter
	Histogram      = eventlog.Histogram
	JournalBuckets = eventlog.JournalBuckets
	JournalTotals  = eventlog.JournalTotals
	TreeUsage      = eventlog.TreeUsage
	WalkTotal      = eventlog.WalkTotal
)

const (
	PassFreeRetention = eventlog.PassFreeRetention
	PruneBatch        = eventlog.PruneBatch
)

type (
	Crossing        = walks.Crossing
	CrossingKey     = walks.CrossingKey
	InProgress      = walks.InProgress
	PassFree        = walks.PassFree
	Reclaimable     = walks.Reclaimable
	Snapshot        = walks.Snapshot
	SnapshotSummary = walks.SnapshotSummary
	StoredTree      = walks.StoredTree
	Walk            = walks.Walk
	WalkBaseline    = walks.WalkBaseline
	WalkRecord      = walks.WalkRecord
	WalkSeen        = walks.WalkSeen
)

const (
	HistoryRetention = walks.HistoryRetention
)

// HistoryEvery is walks' own, copied: set neither (nothing does).
var HistoryEvery = walks.HistoryEvery

var (
	LimitsCrossings = walks.LimitsCrossings
	LimitsOver      = walks.LimitsOver
	WalkAt          = walks.WalkAt
	WithGrace       = walks.WithGrace
)

type (
	Beat                  = sweeps.Beat
	BindConflict          = sweeps.BindConflict
	FleetHost             = sweeps.FleetHost
	FleetTree             = sweeps.FleetTree
	Lease                 = sweeps.Lease
	LockLostError         = sweeps.LockLostError
	PassState             = sweeps.PassState
	PendingEviction       = sweeps.PendingEviction
	Retired               = sweeps.Retired
	RootBinding           = sweeps.RootBinding
	SavedPlan             = sweeps.SavedPlan
	SettledElsewhereError = sweeps.SettledElsewhereError
)

type (
	Generation = registry.Generation
	Version    = registry.Version
	Versions   = registry.Versions
)

var (
	Full = base.Full
)
