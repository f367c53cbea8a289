// Package walks owns what the walks of trees leave: each tree's snapshots
// and the trees kept of them (latest and history), a batch of walks begun
// and stored with its baselines, what a pass found reclaimable, and the
// limit crossings a tree's figures make.
//
// It stands on eventlog, registry and holders; it must never reserve or
// commit a write (admission is the store's own) nor sweep.
package walks

import (
	"context"

	"github.com/xfsq/xfsq/store/internal/base"
	"github.com/xfsq/xfsq/store/internal/eventlog"
)

// Store is the database as this area and those beneath it see it.
type Store struct {
	*eventlog.Store
}

// Tx is a transaction as this area and those beneath it see it.
type Tx struct {
	*eventlog.Tx
	s *Store
}

// New is the store's handle on db, with the areas beneath this one.
func New(db *base.DB) *Store { return &Store{Store: eventlog.New(db)} }

// Wrap is tx as this area sees it.
func (s *Store) Wrap(tx *base.Tx) *Tx { return &Tx{Tx: s.Store.Wrap(tx), s: s} }

// InTx runs fn in a transaction, committed if fn returns nil.
func (s *Store) InTx(ctx context.Context, fn func(*Tx) error) error {
	return s.DB.InTx(ctx, func(tx *base.Tx) error { return fn(s.Wrap(tx)) })
}
