package core

import (
	"context"
	"time"

	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store"
)

// What the use cases beside the core (sandbox/internal/retention, doctor,
// readmodel) call that the core keeps to itself otherwise. Go's internal
// rule keeps shells from reaching any of it; each use case names the part
// it needs as an interface of its own, so that what it may do is written
// down where it is done.

// Now is the core's clock.
func (m *Manager) Now() time.Time { return m.now() }

// ClaimFor is ctx's operation claiming a lock or a pass.
func (m *Manager) ClaimFor(ctx context.Context) store.Claim { return m.claimFor(ctx) }

// HolderLive reports whether the operation h names may still be under way.
func (m *Manager) HolderLive(ctx context.Context, h string) bool { return m.holderLive(ctx, h) }

// InboundTree reads the inbound tree's row, if the root has one.
func (m *Manager) InboundTree(ctx context.Context) (store.Tree, bool, error) {
	return m.inboundTree(ctx)
}

// JournalEviction appends one storage.evicted record.
func (m *Manager) JournalEviction(ctx context.Context, project string, rec deletion.Record) error {
	return m.journalEviction(ctx, project, rec)
}

// Status joins recorded trees with their usage and limits (see status).
func (m *Manager) Status(ctx context.Context, trees []store.Tree, all []quota.Quota, r Read) ([]TreeStatus, error) {
	return m.status(ctx, trees, all, r)
}

// RegisteredIDs are the ID registry's records of the root's filesystem.
func (m *Manager) RegisteredIDs(ctx context.Context) ([]store.IDRecord, error) {
	return m.Store.IDs(ctx, m.fsUUID)
}

// TreesWithoutBackend is a copy of trees without their backend, for an
// answer that gives it once, at its top.
func TreesWithoutBackend(trees []TreeStatus) []TreeStatus { return treesWithoutBackend(trees) }
