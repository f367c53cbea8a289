package fallback

import (
	"time"

	"github.com/xfsq/xfsq/quota"
)

// State is what admission decides from, gathered inside one transaction.
type State struct {
	Tree   string       // for messages, e.g. `project "omni" workspace`
	Limits quota.Limits // the tree's limits; zero fields are unlimited
	// Used is the tree's usage as xfsq knows it: the last walk, plus writes
	// committed through xfsq since, plus live reservations.
	Used quota.Usage
	// RootUsed and RootBudget are the same for the whole sandbox root; a
	// zero budget is unlimited.
	RootUsed, RootBudget uint64
	// MaxFileBytes bounds one write's size; zero is unlimited.
	MaxFileBytes uint64
	// BytesGraceEnds and InodesGraceEnds are when the grace of a tree over
	// its soft limit runs out (zero: no timer running); from then on, as
	// on XFS, the soft limit refuses what the hard one would.
	BytesGraceEnds, InodesGraceEnds time.Time
	Now                             time.Time
}

// Request is one write's additional demand.
type Request struct {
	FileBytes uint64 // the size of the file being written (its content)
	Bytes     uint64 // bytes beyond what the tree already holds (never negative)
	Inodes    uint64 // new inodes: the file if new, missing parent directories
	// Names is what the write's new names may add to the directories
	// they go in (a directory grows by whole blocks as names are added;
	// only the link can measure by how much). It is reserved beside
	// Bytes, but the hard limit and the root budget refuse it only where
	// the tree is past them without it: a write whose content fits
	// exactly is admitted, and its name may take the tree past the limit
	// by the block its directory grows, never further, since the next
	// name is refused. A soft limit past its grace refuses content, as
	// on XFS, not names: the hard limit bounds them.
	Names uint64
}

// graceOver reports whether a soft limit's grace has run out at now.
func graceOver(soft uint64, ends, now time.Time) bool {
	return soft > 0 && !ends.IsZero() && !now.Before(ends)
}

// Admit decides a write before it allocates anything. Exactly at a limit
// is allowed; one byte or inode over is refused with a *quota.LimitError.
func Admit(s State, r Request) error {
	refuse := func(limit string, used, requested, max uint64) error {
		return &quota.LimitError{Tree: s.Tree, Limit: limit, Used: used, Requested: requested, Max: max}
	}
	refuseSoft := func(limit string, used, requested, max uint64, ended time.Time) error {
		return &quota.LimitError{Tree: s.Tree, Limit: limit, Used: used, Requested: requested, Max: max, GraceEnded: ended}
	}
	switch {
	case s.MaxFileBytes > 0 && r.FileBytes > s.MaxFileBytes:
		return refuse(quota.LimitMaxFileBytes, 0, r.FileBytes, s.MaxFileBytes)
	case s.Limits.InodesHard > 0 && r.Inodes > 0 && s.Used.Inodes+r.Inodes > s.Limits.InodesHard:
		return refuse("inodes_hard", s.Used.Inodes, r.Inodes, s.Limits.InodesHard)
	case s.Limits.BytesHard > 0 && r.asksBytes() && s.Used.Bytes+r.Bytes > s.Limits.BytesHard:
		return refuse("bytes_hard", s.Used.Bytes, r.Bytes+r.Names, s.Limits.BytesHard)
	// Past its grace a soft limit refuses as XFS's does (xfs_trans_dqresv):
	// any demand that would leave the tree over it.
	case graceOver(s.Limits.InodesSoft, s.InodesGraceEnds, s.Now) && r.Inodes > 0 && s.Used.Inodes+r.Inodes > s.Limits.InodesSoft:
		return refuseSoft("inodes_soft", s.Used.Inodes, r.Inodes, s.Limits.InodesSoft, s.InodesGraceEnds)
	case graceOver(s.Limits.BytesSoft, s.BytesGraceEnds, s.Now) && r.Bytes > 0 && s.Used.Bytes+r.Bytes > s.Limits.BytesSoft:
		return refuseSoft("bytes_soft", s.Used.Bytes, r.Bytes, s.Limits.BytesSoft, s.BytesGraceEnds)
	case s.RootBudget > 0 && r.asksBytes() && s.RootUsed+r.Bytes > s.RootBudget:
		return refuse("root_budget", s.RootUsed, r.Bytes+r.Names, s.RootBudget)
	}
	return nil
}

// asksBytes reports whether the request asks for any bytes: content,
// directories, or room for its names (which a zero-byte file still takes).
func (r Request) asksBytes() bool { return r.Bytes > 0 || r.Names > 0 }
