package core

import (
	"context"
	"time"

	"github.com/xfsq/xfsq/inventory"
)

// The vocabulary of a snapshot, which the snapshot pass
// (sandbox/internal/snapshots) answers and the use cases that ask for one
// (retention's scheduled pass, doctor, the read model's overview refresh)
// name: the facade hands them the pass (SnapshotFunc), since a use case
// never imports another.

// SnapshotFunc walks trees, stores each walk and returns them
// (snapshots.Snapshots.Snapshot).
type SnapshotFunc func(ctx context.Context, o SnapshotOptions) ([]TreeSnapshot, error)

// TreeSnapshot is one tree's walk as `xfsq snapshot` prints it.
type TreeSnapshot struct {
	Project string `json:"project"`
	Area    string `json:"area"`
	inventory.Node
	Partial     bool             `json:"partial"`
	Errors      uint64           `json:"unreadable_entries"`
	TopFiles    []inventory.File `json:"top_files"`
	At          time.Time        `json:"walked_at"`
	KernelBytes *uint64          `json:"kernel_bytes,omitempty"` // XFS: the kernel's count right after the walk
	// DurationSeconds is how long the walk took (journalled with a
	// scheduled pass: xfsq_walk_duration_seconds comes from it).
	DurationSeconds float64 `json:"duration_seconds"`
	Error           string  `json:"error,omitempty"` // the walk of this tree failed; the others went on
}

// SnapshotOptions choose the trees and bound the walks.
type SnapshotOptions struct {
	Projects []string // none: every tree (the root's inbound tree too); RootOwner names that one
	Area     string   // "": every area
	Walk     inventory.Options
	// Scheduled marks a pass of the ticker (or `snapshot --all`): it runs at
	// background priority and journals one storage.snapshot event.
	Scheduled bool
	// Progress, if set, is called with each walk's running totals and the
	// tree it walks (it replaces Walk.Progress, which cannot name the tree).
	Progress func(TreeProgress)
}

// Validate refuses options no walk can honour, naming the field, so that
// every shell gets the same rule. Zero is the walker's default.
func (o SnapshotOptions) Validate() error {
	switch {
	case o.Walk.Depth < 0 || o.Walk.Depth > inventory.MaxDepth:
		return fieldErrorf("depth", "%d: use 1 to %d", o.Walk.Depth, inventory.MaxDepth)
	case o.Walk.TopK < 0:
		return fieldErrorf("top", "%d: use a positive number", o.Walk.TopK)
	}
	return nil
}
