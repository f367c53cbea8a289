package files

import (
	"context"
	"time"

	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/quota"
)

// Core is what the layer needs of the sandbox core beneath it, declared
// here so that the layer depends on nothing above it: package sandbox
// implements it and hands the layer out (Root.Files). Every call journals
// or accounts as the core does for its own work; the layer never sees the
// store or the quota backend, nor asks which backend is in force.
type Core interface {
	// Dir is the sandbox root's absolute path.
	Dir() string
	// Tree is the tree (project, area) of a ready project, or why there
	// is none (bad input, not found, not ready).
	Tree(ctx context.Context, project, area string) (Tree, error)
	// WriteSettings are the settings a write obeys, in force now.
	WriteSettings(ctx context.Context) (WriteSettings, error)
	// BeginOp runs what ctx carries on as an operation of its own, whose
	// records of work in progress are reclaimable once it ends.
	BeginOp(ctx context.Context) (context.Context, func())
	// RemoveJournalled removes name beneath parent (a directory opened
	// without links from the root) with its storage.evicted records,
	// pending before, settled after with what really went.
	RemoveJournalled(ctx context.Context, project string, parent *saferm.Dir, name string, rec deletion.Record, o saferm.Options) (deletion.Record, saferm.Report, error)
	// Top walks a whole tree as the core walks one, with what else a walk
	// of a tree is good for.
	Top(ctx context.Context, project, area string, opts inventory.Options) (*inventory.Result, error)
}

// Tree is a ready project tree as the core found it: where it is, and the
// core's accounting of what the layer writes into it and removes from it.
type Tree struct {
	Project, Area string
	Path          string // relative to the sandbox root
	Accounting
}

// Accounting is the core's account of one tree: admission and the ledger
// of writes, the credit of removals, and its walks.
type Accounting interface {
	// StartWrite begins the accounting of a write of inodes new inodes;
	// label names the tree in errors, names is what the write's new names
	// may grow their directories by, temp is the write's temporary file
	// (relative to the root) that a reclaim of its reservation may delete.
	StartWrite(label string, limits WriteLimits, inodes, names uint64, temp string) Write
	// RemovalCutoff is the saferm.Options.CountChangedBefore of a removal
	// credited with CreditRemoval.
	RemovalCutoff(ctx context.Context) (time.Time, error)
	// CreditRemoval lowers the tree's usage by what a removal through the
	// layer freed, as of started.
	CreditRemoval(ctx context.Context, freed quota.Usage, uncounted []saferm.Freed, started time.Time) error
	// WalkProgress wraps report, if set, as a walk's Progress for the tree.
	WalkProgress(report func(inventory.TreeProgress)) func(inventory.Progress)
	// WalkIn walks the directory rel of the tree (a path the layer has
	// checked) beneath the tenant's mounts, through no symlink.
	WalkIn(rel string, opts inventory.Options) (*inventory.Result, error)
}

// Write is the accounting of one write, step by step: admission, the
// reservation of its body, the commit to the ledger, and what is given
// back when it does not finish. The core owns the protocol; the layer
// calls each step at its point.
type Write interface {
	Reserve(ctx context.Context, fileBytes, bytes, dirBytes uint64) error
	NamedTemp(ctx context.Context, ino uint64) error
	Held() uint64
	CanGrow() bool
	Grow(ctx context.Context, n uint64) error
	Renew(ctx context.Context) error
	Refusal(ctx context.Context, fileBytes, need uint64) error
	KernelRefusal(err error, need, requested uint64) error
	Commit(ctx context.Context, delta int64, ino uint64) error
	Recheck(ctx context.Context, delta int64, named bool) error
	Undo(ctx context.Context, kept quota.Usage)
	Placed(ctx context.Context, replaced Replaced, grown uint64, since time.Time)
	Release(ctx context.Context)
}

// WriteSettings are the settings a write through the layer obeys.
type WriteSettings struct {
	// MaxFileBytes bounds one write (0: none); RootBudget bounds the whole
	// root on the fallback backend (0: none).
	MaxFileBytes, RootBudget uint64
	// TTL is how long a reservation lives without progress before another
	// writer may reclaim it; SoftGrace how long a fallback tree may stay
	// over a soft limit before writes are refused at it.
	TTL, SoftGrace time.Duration
}

// WriteLimits are the layer's own limits on a write.
type WriteLimits struct {
	MaxFileBytes uint64        // a file may hold at most this; 0: no limit
	RootBudget   uint64        // fallback: all trees of the root together; 0: none
	TTL          time.Duration // a reservation that makes no progress this long expires
	// SoftGrace (fallback) is soft_grace: how long a tree may stay over a
	// soft limit before writes are refused at it, as the kernel refuses
	// them on XFS.
	SoftGrace time.Duration
}

// Replaced is what an overwrite's rename unlinked, credited as far as the
// tree's usage counted it (store.Replaced says how).
type Replaced struct {
	Counted quota.Usage // the last walk counted it: credited as it is
	Ino     uint64      // else the inode, credited what its write's ledger row counted
	Bytes   uint64      // and its blocks when unlinked, at most what is credited
}

// TempPrefix starts the name of every temporary file of the layer: a
// write's body where the filesystem has no O_TMPFILE, and on any
// filesystem the name a body is linked at for its exchange with the
// target. What a reclaim or doctor --fix may delete.
const TempPrefix = ".xfsq-tmp-"
