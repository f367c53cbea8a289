// Package fallback is the quota backend for sandbox roots that are not XFS
// with project quotas: limits are kept by xfsq and usage is measured by
// walking each tree. The kernel enforces nothing here; admission of writes
// made through xfsq is the file layer's job, and writes made outside xfsq
// are only seen at the next walk — every output says "backend: fallback".
//
// It must never follow a symlink or leave the filesystem a tree starts on.
package fallback

import (
	"cmp"
	"errors"
	"os"

	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/quota"
)

// Backend holds no state of its own: every call reads the trees and
// limits from where they are recorded (the store, through Trees). The
// store is the authority, and other processes change it: a long-lived
// process that kept its own copy would refuse limits on a project another
// process added, and report limits another process changed.
type Backend struct {
	reason string
	trees  Trees
	one    Lookup
}

// Tree is what is recorded of one tree: its directory and its limits.
type Tree struct {
	Dir    string
	Limits quota.Limits
}

// Trees reads every tree recorded now, by ID.
type Trees func() (map[quota.ProjectID]Tree, error)

// Lookup reads the tree recorded now with one ID; ok is false when none is.
type Lookup func(id quota.ProjectID) (t Tree, ok bool, err error)

var _ quota.Backend = (*Backend)(nil)

// New returns a backend whose Name carries why XFS could not be used and
// whose trees are whatever trees reads at each call; one, when not nil,
// reads a single tree for the calls about one ID (else they read all).
func New(reason string, trees Trees, one Lookup) *Backend {
	return &Backend{reason: reason, trees: trees, one: one}
}

// Name is "fallback (REASON)".
func (b *Backend) Name() string { return "fallback (" + b.reason + ")" }

// errUnassigned is a call about an ID no recorded tree has.
var errUnassigned = errors.New("no tree is assigned this ID")

// lookup reads the recorded tree of id.
func (b *Backend) lookup(id quota.ProjectID) (Tree, bool, error) {
	if b.one != nil {
		return b.one(id)
	}
	all, err := b.trees()
	if err != nil {
		return Tree{}, false, err
	}
	t, ok := all[id]
	return t, ok, nil
}

// Assign checks that id is recorded for a tree: the record (made by the
// caller first) is the assignment.
func (b *Backend) Assign(dir string, id quota.ProjectID) error {
	if _, ok, err := b.lookup(id); err != nil || !ok {
		return &quota.OpError{Op: "assign", ID: id, Tree: dir, Err: cmp.Or(err, errUnassigned)}
	}
	return nil
}

// SetLimits checks that id is recorded for a tree. The limits take effect
// when the caller records them: admission reads them from the record.
func (b *Backend) SetLimits(id quota.ProjectID, l quota.Limits) error {
	if _, ok, err := b.lookup(id); err != nil || !ok {
		return &quota.OpError{Op: "set limits", ID: id, Err: cmp.Or(err, errUnassigned)}
	}
	return nil
}

// Get walks the tree of id; an unknown id reads as zero.
func (b *Backend) Get(id quota.ProjectID) (quota.Quota, error) {
	t, ok, err := b.lookup(id)
	q := quota.Quota{ID: id, Limits: t.Limits}
	if err != nil || !ok {
		return q, err
	}
	u, err := Walk(t.Dir)
	q.Usage = u
	return q, err
}

// All walks every recorded tree.
func (b *Backend) All() (map[quota.ProjectID]quota.Quota, error) {
	all, err := b.trees()
	if err != nil {
		return nil, err
	}
	out := make(map[quota.ProjectID]quota.Quota, len(all))
	for id, t := range all {
		u, err := Walk(t.Dir)
		if err != nil {
			return nil, err
		}
		out[id] = quota.Quota{ID: id, Limits: t.Limits, Usage: u}
	}
	return out, nil
}

// Clear does nothing: the limits go with the record, which the caller
// deletes.
func (b *Backend) Clear(id quota.ProjectID) error { return nil }

// Walk measures a tree as du does (inventory.Measure): allocated bytes
// and inodes, the directory itself included, hard-linked files once,
// symlinks counted but not followed, mount points not entered. A missing
// tree is empty.
//
// It walks through the mounts as they are: what sets the baseline walks
// beneath them instead (sandbox/internal/core/treewalk's measureTree).
func Walk(dir string) (quota.Usage, error) {
	m, err := inventory.MeasureDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return quota.Usage{}, nil
	}
	if err != nil {
		return quota.Usage{}, &quota.OpError{Op: "measure", Tree: dir, Err: err}
	}
	return quota.Usage{Bytes: m.Bytes, Inodes: m.Inodes}, nil
}
