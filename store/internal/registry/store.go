// Package registry owns what a host has: its projects and their trees
// (paths, backends, project IDs, limits), the project-ID registry of each
// filesystem, the settings, and the change mark a reader compares.
//
// It stands on holders (an adder's lease); it must never journal, walk or
// sweep: those areas stand on it.
package registry

import (
	"context"

	"github.com/xfsq/xfsq/store/internal/base"
	"github.com/xfsq/xfsq/store/internal/holders"
)

// Store is the database as this area and those beneath it see it.
type Store struct {
	*holders.Store
	probe    generationProbe
	versions versionFeed // every project's Version, followed (VersionAt)
}

// Tx is a transaction as this area and those beneath it see it.
type Tx struct {
	*holders.Tx
	s *Store
}

// New is the store's handle on db, with the areas beneath this one.
func New(db *base.DB) *Store { return &Store{Store: holders.New(db)} }

// Wrap is tx as this area sees it.
func (s *Store) Wrap(tx *base.Tx) *Tx { return &Tx{Tx: s.Store.Wrap(tx), s: s} }

// InTx runs fn in a transaction, committed if fn returns nil.
func (s *Store) InTx(ctx context.Context, fn func(*Tx) error) error {
	return s.DB.InTx(ctx, func(tx *base.Tx) error { return fn(s.Wrap(tx)) })
}

// Close ends what this area runs, then closes the areas beneath it.
func (s *Store) Close() error {
	s.probe.close()
	return s.Store.Close()
}
