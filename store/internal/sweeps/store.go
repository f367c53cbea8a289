// Package sweeps owns the work that deletes and the state around it: sweep
// locks and the pending deletions a sweep settles, leases that shield a
// project from deletion, scheduled passes, saved plans, the binding of a
// root to its host, and the fleet (heartbeats, retirement) on a shared
// database.
//
// It stands on every other area; it must never delete a file itself (the
// callers do, after the journal record this area commits first).
package sweeps

import (
	"context"

	"github.com/xfsq/xfsq/store/internal/base"
	"github.com/xfsq/xfsq/store/internal/walks"
)

// Store is the database as this area and those beneath it see it.
type Store struct {
	*walks.Store
}

// Tx is a transaction as this area and those beneath it see it.
type Tx struct {
	*walks.Tx
	s *Store
}

// New is the store's handle on db, with the areas beneath this one.
func New(db *base.DB) *Store { return &Store{Store: walks.New(db)} }

// Wrap is tx as this area sees it.
func (s *Store) Wrap(tx *base.Tx) *Tx { return &Tx{Tx: s.Store.Wrap(tx), s: s} }

// InTx runs fn in a transaction, committed if fn returns nil.
func (s *Store) InTx(ctx context.Context, fn func(*Tx) error) error {
	return s.DB.InTx(ctx, func(tx *base.Tx) error { return fn(s.Wrap(tx)) })
}
