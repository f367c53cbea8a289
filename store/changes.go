package store

import (
	"context"
	"database/sql"
	"sync"

	"github.com/jmoiron/sqlx"
)

// ChangeMark is a cheap fingerprint of what this host's usage figures are
// made of: it moves whenever a project, tree, ledger row, reservation or
// setting of this host changes (each moves the project's version,
// migration 11's triggers), whenever a deletion of one of its paths is
// journalled done (touchVersion: its path leaves top_paths; a sweep's as it ends the project, EndSweep), whenever a snapshot of one of this host's
// trees is stored, a tree's reclaimable figure is planned again, or a
// scheduled pass records the free space. A cache of figures read from the
// store (the server's overview) is still right while the mark is
// unchanged — for this store's own records: the kernel's counters on XFS
// and the free space move without it, so such a cache bounds its age too.
// Another host's writes leave it where it is: in a busy fleet a mark over
// the whole database made every host's overview a rebuild at every
// request.
type ChangeMark struct {
	Versions      int64 // the sum of this host's project and settings versions
	Snapshots     int64 // this host's trees with a stored snapshot
	SnapshotTimes int64 // a checksum of when each was taken
	Reclaimable   int64 // a checksum of when each tree's reclaimable figure was planned
	Passes        int64 // when the last scheduled pass recorded the free space
}

// ChangeMark reads the mark in one prepared query: a range of this host's
// rows of three small tables (one row per project, one per tree), never a
// table that grows with time, and one index lookup.
func (s *Store) ChangeMark(ctx context.Context) (ChangeMark, error) {
	var m struct {
		V  int64 `db:"v"`
		N  int64 `db:"n"`
		AT int64 `db:"at"`
		R  int64 `db:"r"`
		P  int64 `db:"p"`
	}
	ctx, done, err := s.bounded(ctx)
	if err != nil {
		return ChangeMark{}, err
	}
	st, err := s.prepared(ctx, changeMarkQuery)
	if err != nil {
		return ChangeMark{}, done(err)
	}
	err = done(st.GetContext(ctx, &m, s.Host, s.Host, s.Host, s.Host, s.Host))
	return ChangeMark{Versions: m.V, Snapshots: m.N, SnapshotTimes: m.AT, Reclaimable: m.R, Passes: m.P}, err
}

// changeMarkQuery sums the snapshot and plan times modulo 2^31−1, so that
// the sum of any number of trees' stays within a BIGINT (SQLite's SUM
// fails on an overflow): a snapshot moves its tree's time by anything but
// a multiple of that (35 minutes), which is what a new one taken after
// the last does. A plan's count of rows moves it too.
const changeMarkQuery = `SELECT
		(SELECT COALESCE(SUM(version), 0) FROM project_versions WHERE host = ?) AS v,
		(SELECT COUNT(*) FROM snapshot_trees WHERE host = ?) AS n,
		(SELECT COALESCE(SUM(at % 2147483647), 0) FROM snapshot_trees WHERE host = ?) AS at,
		(SELECT COUNT(*) + COALESCE(SUM((planned_at + bytes) % 2147483647), 0) FROM reclaimable WHERE host = ?) AS r,
		(SELECT COALESCE(MAX(at), 0) FROM pass_free WHERE host = ?) AS p`

// stmtCache holds the prepared statements of queries asked many times a
// second by a long-lived process (ChangeMark and ProjectVersion on every
// request, a scrape's journal read, a check's tree read): parsing them
// each time cost as much as running them. Keyed by
// the query's text, which callers build from a bounded set of shapes.
type stmtCache struct {
	mu    sync.Mutex
	stmts map[string]*sqlx.Stmt
}

// hotQuery is a query asked many times a second: prepared on the pool, or,
// where the DSN says prepare=no, sent each time it is asked.
type hotQuery struct {
	st *sqlx.Stmt
	db *sqlx.DB
	q  string // rebound, for db
}

func (h hotQuery) QueryRowxContext(ctx context.Context, args ...any) *sqlx.Row {
	if h.st == nil {
		return h.db.QueryRowxContext(ctx, h.q, args...)
	}
	return h.st.QueryRowxContext(ctx, args...)
}

func (h hotQuery) GetContext(ctx context.Context, dest any, args ...any) error {
	if h.st == nil {
		return h.db.GetContext(ctx, dest, h.q, args...)
	}
	return h.st.GetContext(ctx, dest, args...)
}

func (h hotQuery) SelectContext(ctx context.Context, dest any, args ...any) error {
	if h.st == nil {
		return h.db.SelectContext(ctx, dest, h.q, args...)
	}
	return h.st.SelectContext(ctx, dest, args...)
}

func (h hotQuery) QueryContext(ctx context.Context, args ...any) (*sql.Rows, error) {
	if h.st == nil {
		return h.db.QueryContext(ctx, h.q, args...)
	}
	return h.st.QueryContext(ctx, args...)
}

// prepared is query (with ? placeholders) prepared on s's pool, once; or
// sent as it is each time where the DSN says prepare=no.
func (s *Store) prepared(ctx context.Context, query string) (hotQuery, error) {
	if s.postgres && !s.bounds.Prepare {
		return hotQuery{db: s.db, q: s.db.Rebind(query)}, nil
	}
	c := &s.stmts
	c.mu.Lock()
	if st := c.stmts[query]; st != nil {
		c.mu.Unlock()
		return hotQuery{st: st}, nil
	}
	c.mu.Unlock()
	// Prepared without the lock: a prepare waiting on a stalled store
	// held up every caller of every cached query.
	st, err := s.db.PreparexContext(ctx, s.db.Rebind(query))
	if err != nil {
		return hotQuery{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept := c.stmts[query]; kept != nil {
		st.Close() // another caller's came first
		return hotQuery{st: kept}, nil
	}
	if c.stmts == nil {
		c.stmts = map[string]*sqlx.Stmt{}
	}
	c.stmts[query] = st
	return hotQuery{st: st}, nil
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.stmts {
		st.Close()
	}
	c.stmts = nil
}
