package store

import (
	"context"
	"sync"

	"github.com/jmoiron/sqlx"
)

// ChangeMark is a cheap fingerprint of what the usage figures are made of:
// it moves whenever a journal record, a ledger row or a snapshot is added
// and whenever a write's reservation begins, grows or ends. A cache of
// figures read from the store (the server's overview) is still right while
// the mark is unchanged — for this store's own records: the kernel's
// counters on XFS, and a walk recorded only as a baseline (project show
// --refresh), move without it, so such a cache bounds its age too.
type ChangeMark struct {
	Events, Ledger, Snapshots                    int64
	Reservations, LastReservation, ReservedBytes int64
}

// ChangeMark reads the mark in one prepared query. Each part is the maximum of an
// auto-increment key (an index lookup on both drivers) or an aggregate of
// the reservations, which hold only the writes in flight; it is read for
// every host, so another host's change moves it too (a cache is then
// remade for nothing, never kept wrongly).
func (s *Store) ChangeMark(ctx context.Context) (ChangeMark, error) {
	var m struct {
		E  int64 `db:"e"`
		L  int64 `db:"l"`
		S  int64 `db:"s"`
		RN int64 `db:"rn"`
		RM int64 `db:"rm"`
		RB int64 `db:"rb"`
	}
	st, err := s.prepared(ctx, changeMarkQuery)
	if err != nil {
		return ChangeMark{}, err
	}
	err = st.GetContext(ctx, &m)
	return ChangeMark{Events: m.E, Ledger: m.L, Snapshots: m.S, Reservations: m.RN, LastReservation: m.RM, ReservedBytes: m.RB}, err
}

const changeMarkQuery = `SELECT
		(SELECT COALESCE(MAX(id), 0) FROM events) AS e,
		(SELECT COALESCE(MAX(id), 0) FROM ledger) AS l,
		(SELECT COALESCE(MAX(id), 0) FROM snapshots) AS s,
		(SELECT COUNT(*) FROM reservations) AS rn,
		(SELECT COALESCE(MAX(id), 0) FROM reservations) AS rm,
		(SELECT COALESCE(SUM(bytes), 0) FROM reservations) AS rb`

// stmtCache holds the prepared statements of queries asked many times a
// second by a long-lived process (ChangeMark and ProjectVersion on every
// request, a scrape's journal read, a check's tree read): parsing them
// each time cost as much as running them. Keyed by
// the query's text, which callers build from a bounded set of shapes.
type stmtCache struct {
	mu    sync.Mutex
	stmts map[string]*sqlx.Stmt
}

// prepared is query (with ? placeholders) prepared on s's pool, once.
func (s *Store) prepared(ctx context.Context, query string) (*sqlx.Stmt, error) {
	c := &s.stmts
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.stmts[query]; st != nil {
		return st, nil
	}
	st, err := s.db.PreparexContext(ctx, s.db.Rebind(query))
	if err != nil {
		return nil, err
	}
	if c.stmts == nil {
		c.stmts = map[string]*sqlx.Stmt{}
	}
	c.stmts[query] = st
	return st, nil
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.stmts {
		st.Close()
	}
	c.stmts = nil
}
