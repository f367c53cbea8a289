// Package fallback is the quota backend for sandbox roots that are not XFS
// with project quotas: limits are kept by xfsq and usage is measured by
// walking each tree. The kernel enforces nothing here; admission of writes
// made through xfsq is the file layer's job, and writes made outside xfsq
// are only seen at the next walk — every output says "backend: fallback".
//
// It must never follow a symlink or leave the filesystem a tree starts on.
package fallback

import (
	"errors"
	"os"
	"sync"

	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/quota"
)

// Backend keeps the trees and limits it was told about, in memory; the
// caller (the project manager) persists them and tells it again at start.
type Backend struct {
	reason string
	mu     sync.Mutex
	trees  map[quota.ProjectID]*tree
}

type tree struct {
	dir    string
	limits quota.Limits
}

var _ quota.Backend = (*Backend)(nil)

// New returns a backend whose Name carries why XFS could not be used.
func New(reason string) *Backend {
	return &Backend{reason: reason, trees: map[quota.ProjectID]*tree{}}
}

// Name is "fallback (REASON)".
func (b *Backend) Name() string { return "fallback (" + b.reason + ")" }

// Assign records that id measures dir.
func (b *Backend) Assign(dir string, id quota.ProjectID) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.trees[id]; ok {
		t.dir = dir
	} else {
		b.trees[id] = &tree{dir: dir}
	}
	return nil
}

// SetLimits records the limits of an assigned id.
func (b *Backend) SetLimits(id quota.ProjectID, l quota.Limits) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.trees[id]
	if !ok {
		return &quota.OpError{Op: "set limits", ID: id, Err: errors.New("no tree is assigned this ID")}
	}
	t.limits = l
	return nil
}

// Get walks the tree of id; an unknown id reads as zero.
func (b *Backend) Get(id quota.ProjectID) (quota.Quota, error) {
	b.mu.Lock()
	t, ok := b.trees[id]
	var dir string
	var limits quota.Limits
	if ok {
		dir, limits = t.dir, t.limits
	}
	b.mu.Unlock()
	q := quota.Quota{ID: id, Limits: limits}
	if !ok {
		return q, nil
	}
	u, err := Walk(dir)
	q.Usage = u
	return q, err
}

// All walks every known tree.
func (b *Backend) All() (map[quota.ProjectID]quota.Quota, error) {
	b.mu.Lock()
	ids := make([]quota.ProjectID, 0, len(b.trees))
	for id := range b.trees {
		ids = append(ids, id)
	}
	b.mu.Unlock()
	out := make(map[quota.ProjectID]quota.Quota, len(ids))
	for _, id := range ids {
		q, err := b.Get(id)
		if err != nil {
			return nil, err
		}
		out[id] = q
	}
	return out, nil
}

// Clear forgets the limits of id.
func (b *Backend) Clear(id quota.ProjectID) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.trees[id]; ok {
		t.limits = quota.Limits{}
	}
	return nil
}

// Walk measures a tree as du does (inventory.Walk): allocated bytes and
// inodes, the directory itself included, hard-linked files once, symlinks
// counted but not followed, mount points not entered. A missing tree is
// empty.
func Walk(dir string) (quota.Usage, error) {
	u, _, err := Measure(dir)
	return u, err
}

// Measure is Walk, and also says whether the walk was settled: false when
// entries vanished or changed under it (a tenant renaming directories as
// it ran can hide one from every name it looked at), so that its figure
// may be low.
func Measure(dir string) (u quota.Usage, settled bool, err error) {
	res, err := inventory.Walk(dir, inventory.Options{Depth: 1, TopK: 1})
	if errors.Is(err, os.ErrNotExist) {
		return quota.Usage{}, true, nil
	}
	if err != nil {
		return quota.Usage{}, false, &quota.OpError{Op: "measure", Tree: dir, Err: err}
	}
	return quota.Usage{Bytes: res.Root.SizeBytes, Inodes: res.Root.Files + res.Root.Dirs}, res.Errors == 0, nil
}
