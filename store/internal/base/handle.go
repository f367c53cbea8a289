// Package base holds what every area of the store shares: the handle on
// the database (DB) and on one transaction (Tx), the dialect's helpers
// (times as microseconds, placeholders, advisory locks), a request's wait
// budget, the prepared-statement cache and the counting of statements.
//
// It owns no table and no query of its own: the areas above it
// (store/internal/...) do, and package store is their one public face. It
// must never import an area or anything of xfsq.
package base

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
)

// DB is a handle on the database; safe for concurrent use.
type DB struct {
	SQL      *sqlx.DB
	Postgres bool
	// Prepare: prepare hot queries (Prepared) on PostgreSQL too (the
	// DSN's prepare option); SQLite always does.
	Prepare bool
	Addr    string // PostgreSQL's host:port, for UnreachableError
	// Host scopes rows that belong to one machine (projects, trees,
	// settings) when several hosts share a PostgreSQL database.
	Host string
	// Committed counts commits through InTx (Generation).
	Committed atomic.Uint64
	Meter     Meter // statements sent (Statements), commits timed (TrackCommits)

	stmts stmtCache // queries asked many times a second, prepared once
}

// Close closes the prepared statements and the database.
func (s *DB) Close() error {
	s.stmts.close()
	return s.SQL.Close()
}

// Tx is one transaction; every write goes through one.
type Tx struct {
	SQL *sqlx.Tx
	DB  *DB
	// locked are the keys Lock took in this transaction: held to its
	// end, so taking one again is a round trip for nothing.
	locked map[string]bool
	// SweepConfirms: a sweep confirms its own deletion, whose version
	// move EndSweep makes once for the project (trackEviction).
	SweepConfirms bool
}

// InTx runs fn in a transaction, committed if fn returns nil.
func (s *DB) InTx(ctx context.Context, fn func(*Tx) error) error {
	ctx, done, err := s.Bounded(ctx)
	if err != nil {
		return err
	}
	tx, err := s.SQL.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", done(err))
	}
	if err := fn(&Tx{SQL: tx, DB: s}); err != nil {
		tx.Rollback()
		return done(err)
	}
	err = tx.Commit()
	s.Committed.Add(1) // even a failed commit: whether it took is unknown
	if err = done(err); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Exec runs query, rebound for the driver, in the transaction.
func (t *Tx) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return t.SQL.ExecContext(ctx, t.SQL.Rebind(query), args...)
}

// Get reads one row of query into dest.
func (t *Tx) Get(ctx context.Context, dest any, query string, args ...any) error {
	return t.SQL.GetContext(ctx, dest, t.SQL.Rebind(query), args...)
}

// Sel reads every row of query into dest.
func (t *Tx) Sel(ctx context.Context, dest any, query string, args ...any) error {
	return t.SQL.SelectContext(ctx, dest, t.SQL.Rebind(query), args...)
}

// Lock serialises transactions on each of keys across processes and
// hosts, taken in the order given, in one statement (a round trip to a
// shared PostgreSQL each). On SQLite every transaction already holds the
// database write lock from BEGIN.
func (t *Tx) Lock(ctx context.Context, keys ...string) error {
	if !t.DB.Postgres {
		return nil
	}
	var take []string
	args := make([]any, 0, len(keys))
	for _, k := range keys {
		if !t.locked[k] && !slices.Contains(args, any(k)) {
			take = append(take, "pg_advisory_xact_lock(hashtext(?))")
			args = append(args, k)
		}
	}
	if len(take) == 0 {
		return nil
	}
	if _, err := t.Exec(ctx, "SELECT "+strings.Join(take, ", "), args...); err != nil {
		return err
	}
	t.Held(keys...)
	return nil
}

// Held notes keys as locked to the end of the transaction, by a statement
// of the caller's that took them with what else it does (Lock would take
// them again).
func (t *Tx) Held(keys ...string) {
	if t.locked == nil {
		t.locked = map[string]bool{}
	}
	for _, k := range keys {
		t.locked[k] = true
	}
}

// Sel reads every row of query into dest, within ctx's budget.
func (s *DB) Sel(ctx context.Context, dest any, query string, args ...any) error {
	ctx, done, err := s.Bounded(ctx)
	if err != nil {
		return err
	}
	return done(s.SQL.SelectContext(ctx, dest, s.SQL.Rebind(query), args...))
}

// Get reads one row of query into dest, within ctx's budget.
func (s *DB) Get(ctx context.Context, dest any, query string, args ...any) error {
	ctx, done, err := s.Bounded(ctx)
	if err != nil {
		return err
	}
	return done(s.SQL.GetContext(ctx, dest, s.SQL.Rebind(query), args...))
}

// ToMicros is t as stored: Unix microseconds, one portable type for both
// drivers.
func ToMicros(t time.Time) int64 { return t.UnixMicro() }

// FromMicros is a stored time back; 0 is the zero time.
func FromMicros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

// ErrNotFound is wrapped when a row asked for does not exist.
var ErrNotFound = errors.New("not found")

// stmtCache holds the prepared statements of queries asked many times a
// second by a long-lived process (ChangeMark and ProjectVersion on every
// request, a scrape's journal read, a check's tree read): parsing them
// each time cost as much as running them. Keyed by
// the query's text, which callers build from a bounded set of shapes.
type stmtCache struct {
	mu    sync.Mutex
	stmts map[string]*sqlx.Stmt
}

// HotQuery is a query asked many times a second: prepared on the pool, or,
// where the DSN says prepare=no, sent each time it is asked.
type HotQuery struct {
	st *sqlx.Stmt
	db *sqlx.DB
	q  string // rebound, for db
}

func (h HotQuery) QueryRowxContext(ctx context.Context, args ...any) *sqlx.Row {
	if h.st == nil {
		return h.db.QueryRowxContext(ctx, h.q, args...)
	}
	return h.st.QueryRowxContext(ctx, args...)
}

func (h HotQuery) GetContext(ctx context.Context, dest any, args ...any) error {
	if h.st == nil {
		return h.db.GetContext(ctx, dest, h.q, args...)
	}
	return h.st.GetContext(ctx, dest, args...)
}

func (h HotQuery) SelectContext(ctx context.Context, dest any, args ...any) error {
	if h.st == nil {
		return h.db.SelectContext(ctx, dest, h.q, args...)
	}
	return h.st.SelectContext(ctx, dest, args...)
}

func (h HotQuery) QueryContext(ctx context.Context, args ...any) (*sql.Rows, error) {
	if h.st == nil {
		return h.db.QueryContext(ctx, h.q, args...)
	}
	return h.st.QueryContext(ctx, args...)
}

// prepared is query (with ? placeholders) prepared on s's pool, once; or
// sent as it is each time where the DSN says prepare=no.
func (s *DB) Prepared(ctx context.Context, query string) (HotQuery, error) {
	if s.Postgres && !s.Prepare {
		return HotQuery{db: s.SQL, q: s.SQL.Rebind(query)}, nil
	}
	c := &s.stmts
	c.mu.Lock()
	if st := c.stmts[query]; st != nil {
		c.mu.Unlock()
		return HotQuery{st: st}, nil
	}
	c.mu.Unlock()
	// Prepared without the lock: a prepare waiting on a stalled store
	// held up every caller of every cached query.
	st, err := s.SQL.PreparexContext(ctx, s.SQL.Rebind(query))
	if err != nil {
		return HotQuery{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept := c.stmts[query]; kept != nil {
		st.Close() // another caller's came first
		return HotQuery{st: kept}, nil
	}
	if c.stmts == nil {
		c.stmts = map[string]*sqlx.Stmt{}
	}
	c.stmts[query] = st
	return HotQuery{st: st}, nil
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.stmts {
		st.Close()
	}
	c.stmts = nil
}
