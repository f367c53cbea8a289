// Package eventlog owns the append-only journal (the events table): a
// record appended in the caller's transaction, and what follows from it
// there (a pending deletion tracked, a pass's free space kept); the reads
// of the journal, its totals and their checkpoint, and its pruning.
//
// It stands on registry and holders; it must never delete a record that a
// checkpoint has not totalled, nor one a pending deletion still needs.
package eventlog

import (
	"context"

	"github.com/xfsq/xfsq/store/internal/base"
	"github.com/xfsq/xfsq/store/internal/registry"
)

// Store is the database as this area and those beneath it see it.
type Store struct {
	*registry.Store
}

// Tx is a transaction as this area and those beneath it see it.
type Tx struct {
	*registry.Tx
	s *Store
}

// New is the store's handle on db, with the areas beneath this one.
func New(db *base.DB) *Store { return &Store{Store: registry.New(db)} }

// Wrap is tx as this area sees it.
func (s *Store) Wrap(tx *base.Tx) *Tx { return &Tx{Tx: s.Store.Wrap(tx), s: s} }

// InTx runs fn in a transaction, committed if fn returns nil.
func (s *Store) InTx(ctx context.Context, fn func(*Tx) error) error {
	return s.DB.InTx(ctx, func(tx *base.Tx) error { return fn(s.Wrap(tx)) })
}
