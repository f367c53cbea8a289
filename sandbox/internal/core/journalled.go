package core

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/store"
)

// RemoveJournalled is deletion.Delete with this manager's journal: name
// beneath parent (a directory opened without links from the root) is
// removed with its storage.evicted records, pending before, settled after
// with what really went. rec says what goes and why; its path, state,
// holder and counts are filled in here.
func (m *Manager) RemoveJournalled(ctx context.Context, project string, parent *saferm.Dir, name string, rec deletion.Record, o saferm.Options) (deletion.Record, saferm.Report, error) {
	ctx, end := BeginOp(ctx)
	defer end()
	me := HolderOf(ctx)
	if rec.SweepID == "" && rec.DeletionID == "" {
		rec.DeletionID = newDeletionID()
	}
	return deletion.Delete(ctx, func(ctx context.Context, project string, r deletion.Record) error {
		r.Holder = me
		return m.journalEviction(ctx, project, r)
	}, project, parent, name, rec, o)
}

// journalEviction appends one storage.evicted record: a pending one, or
// the one settling it, which only its pending record's being still
// pending lets through (store.ConfirmPending): a process thawed after
// another took it for gone and settled its deletion must not journal it
// a second time.
func (m *Manager) journalEviction(ctx context.Context, project string, rec deletion.Record) error {
	if rec.State != deletion.StatePending {
		return m.Store.ConfirmPending(ctx, project, m.actor(ctx), rec)
	}
	return m.Store.InTx(ctx, func(tx *store.Tx) error {
		return tx.AppendEvent(ctx, project, m.actor(ctx), rec)
	})
}

// newDeletionID names one deletion outside a sweep (see deletion.Record).
func newDeletionID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "rm-" + hex.EncodeToString(b)
}
