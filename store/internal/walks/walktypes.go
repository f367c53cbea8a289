package walks

import "time"

// Walk is when a walk of a tree began, as BeginWalk reads it.
type Walk struct {
	// At is when it began: the tree's walked_at from then on.
	At time.Time
	// Settled is the latest moment by which every write committed to the
	// ledger had its file in place for the walk to see: At, or just before
	// the earliest write of the tree committed but not linked as the walk
	// began (a write links its file only after its ledger row is
	// stamped). Ledger rows up to Settled are in the walk's figure; later
	// ones stay.
	Settled time.Time
	// Writing is what the walk must leave out (inventory.Options.Writing):
	// the named temporary files at the tree's top of the writes in
	// progress as it began, each with the room its reservation holds.
	// Their reservations count them; a walk counting them too counted each
	// twice until the next walk.
	Writing map[string]InProgress
}

// InProgress is one write's named temporary file: its inode (TempInode
// recorded it) and the room its reservation holds. The walker has its own
// (inventory.InProgress): store imports nothing of xfsq but quota and journal.
type InProgress struct{ Ino, Room uint64 }

// WalkAt is a walk that began at t with no write through xfsq in flight:
// for tests, and for a tree no writer can reach yet.
func WalkAt(t time.Time) Walk { return Walk{At: t, Settled: t} }

// WalkSeen says what a walk may have missed. Either makes its figure a
// floor: it is only taken where it raises the tree's usage, never to lower
// it.
type WalkSeen struct {
	// Unsettled: entries vanished or changed under the walk (a tenant
	// renaming directories while it ran can hide one from it).
	Unsettled bool
	// Hidden: mount points hid part of the tree from the walk, and what is
	// beneath them was never counted; Baseline says so until a walk sees
	// the whole tree, so that nothing is credited by this one.
	Hidden bool
}
