// Package holders owns liveness across machines: each process's lease in
// the holders table, renewed by a heartbeat while its store is open and
// expired by the database's clock, and whether a holder named by a record
// of work in progress is gone.
//
// It is the lowest area of the store: it must never import another area
// or journal anything (what a takeover journals is the event log's).
package holders

import (
	"context"

	"github.com/xfsq/xfsq/store/internal/base"
)

// Store is the database as this area and those beneath it see it.
type Store struct {
	*base.DB
	beat heartbeat // this process's lease
}

// Tx is a transaction as this area and those beneath it see it.
type Tx struct {
	*base.Tx
	s *Store
}

// New is the store's handle on db, with the areas beneath this one.
func New(db *base.DB) *Store { return &Store{DB: db} }

// Wrap is tx as this area sees it.
func (s *Store) Wrap(tx *base.Tx) *Tx { return &Tx{Tx: tx, s: s} }

// InTx runs fn in a transaction, committed if fn returns nil.
func (s *Store) InTx(ctx context.Context, fn func(*Tx) error) error {
	return s.DB.InTx(ctx, func(tx *base.Tx) error { return fn(s.Wrap(tx)) })
}

// Close ends what this area runs, then closes the areas beneath it.
func (s *Store) Close() error {
	s.beat.close()
	return s.DB.Close()
}
