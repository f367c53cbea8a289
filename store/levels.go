package store

import (
	"context"

	"github.com/xfsq/xfsq/store/internal/base"
	"github.com/xfsq/xfsq/store/internal/sweeps"
)

// The store's areas (store/internal/...) stand each on the one beneath
// it: holders at the bottom, then registry, eventlog, walks and sweeps.
// Store and Tx embed the topmost, so that every area's methods are the
// store's, and a method of one area calls those beneath it as its own.

func newStore(db *base.DB) *Store { return &Store{Store: sweeps.New(db)} }

// Tx is one transaction; every write goes through one.
type Tx struct {
	*sweeps.Tx
	s *Store
}

// InTx runs fn in a transaction, committed if fn returns nil.
func (s *Store) InTx(ctx context.Context, fn func(*Tx) error) error {
	return s.DB.InTx(ctx, func(tx *base.Tx) error { return fn(&Tx{Tx: s.Store.Wrap(tx), s: s}) })
}
