package base

import (
	"context"
	"database/sql/driver"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Statements is how many statements this store has sent to the database
// since it was opened: every query and exec, prepared or not, and every
// BEGIN, COMMIT and ROLLBACK. A read of a host's trees is held to a
// constant count by it (the set-based reads' tests): on PostgreSQL each is
// a round trip, and a per-tree statement on 1,000 trees cost seconds.
func (s *DB) Statements() int64 { return s.Meter.n.Load() }

// TrackCommits makes the store keep the duration of each commit from now
// on (the client's view: the round trip and the server's flush), until
// Commits takes them: a fleet benchmark's p99 commit latency. At most
// maxTrackedCommits are kept; untracked, a commit costs one atomic load.
func (s *DB) TrackCommits() { s.Meter.track.Store(true) }

// Commits stops tracking and returns the durations kept since TrackCommits.
func (s *DB) Commits() []time.Duration {
	s.Meter.track.Store(false)
	s.Meter.mu.Lock()
	defer s.Meter.mu.Unlock()
	out := slices.Clone(s.Meter.commits)
	s.Meter.commits = s.Meter.commits[:0]
	return out
}

const maxTrackedCommits = 1 << 20

// Meter is what a store's connections report into: the statements they
// sent, and each commit's duration while tracked.
type Meter struct {
	n       atomic.Int64
	track   atomic.Bool
	mu      sync.Mutex
	commits []time.Duration
}

func (m *Meter) commit(commit func() error) error {
	m.n.Add(1)
	if !m.track.Load() {
		return commit()
	}
	start := time.Now()
	err := commit()
	d := time.Since(start)
	m.mu.Lock()
	if len(m.commits) < maxTrackedCommits {
		m.commits = append(m.commits, d)
	}
	m.mu.Unlock()
	return err
}

// CountingConnector hands out connections that count what they send into n.
// It wraps every connection the store opens, on both drivers: an atomic add
// per statement is nothing beside the statement.
type CountingConnector struct {
	inner driver.Connector
	n     *Meter
}

// Counting is inner's connections, counted into m.
func Counting(inner driver.Connector, m *Meter) CountingConnector {
	return CountingConnector{inner: inner, n: m}
}

func (c CountingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return countingConn{c: conn, n: c.n}, nil
}

func (c CountingConnector) Driver() driver.Driver { return c.inner.Driver() }

// countingConn passes every call on to c, counting the statements. The
// interfaces both drivers' connections implement are implemented here;
// one the inner connection lacks answers as database/sql's defaults do
// (driver.ErrSkip), so that the pool falls back exactly as it would.
type countingConn struct {
	c driver.Conn
	n *Meter
}

func (w countingConn) Prepare(q string) (driver.Stmt, error) {
	return w.PrepareContext(context.Background(), q)
}

func (w countingConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	var st driver.Stmt
	var err error
	if p, ok := w.c.(driver.ConnPrepareContext); ok {
		st, err = p.PrepareContext(ctx, q)
	} else {
		st, err = w.c.Prepare(q)
	}
	if err != nil {
		return nil, err
	}
	return countingStmt{s: st, n: w.n}, nil
}

func (w countingConn) Close() error { return w.c.Close() }

func (w countingConn) Begin() (driver.Tx, error) {
	return w.BeginTx(context.Background(), driver.TxOptions{})
}

func (w countingConn) BeginTx(ctx context.Context, o driver.TxOptions) (driver.Tx, error) {
	w.n.n.Add(1)
	var tx driver.Tx
	var err error
	if b, ok := w.c.(driver.ConnBeginTx); ok {
		tx, err = b.BeginTx(ctx, o)
	} else {
		//lint:ignore SA1019 the driver has nothing newer
		tx, err = w.c.Begin()
	}
	if err != nil {
		return nil, err
	}
	return countingTx{t: tx, n: w.n}, nil
}

func (w countingConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := w.c.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	r, err := e.ExecContext(ctx, q, args)
	if err != driver.ErrSkip {
		w.n.n.Add(1)
	}
	return r, err
}

func (w countingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	e, ok := w.c.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	r, err := e.QueryContext(ctx, q, args)
	if err != driver.ErrSkip {
		w.n.n.Add(1)
	}
	return r, err
}

func (w countingConn) Ping(ctx context.Context) error {
	if p, ok := w.c.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (w countingConn) ResetSession(ctx context.Context) error {
	if r, ok := w.c.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (w countingConn) IsValid() bool {
	if v, ok := w.c.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (w countingConn) CheckNamedValue(nv *driver.NamedValue) error {
	if c, ok := w.c.(driver.NamedValueChecker); ok {
		return c.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

type countingStmt struct {
	s driver.Stmt
	n *Meter
}

func (w countingStmt) Close() error  { return w.s.Close() }
func (w countingStmt) NumInput() int { return w.s.NumInput() }

func (w countingStmt) Exec(args []driver.Value) (driver.Result, error) {
	return w.ExecContext(context.Background(), Named(args))
}

func (w countingStmt) Query(args []driver.Value) (driver.Rows, error) {
	return w.QueryContext(context.Background(), Named(args))
}

func (w countingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	w.n.n.Add(1)
	if e, ok := w.s.(driver.StmtExecContext); ok {
		return e.ExecContext(ctx, args)
	}
	//lint:ignore SA1019 the driver has nothing newer
	return w.s.Exec(values(args))
}

func (w countingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	w.n.n.Add(1)
	if q, ok := w.s.(driver.StmtQueryContext); ok {
		return q.QueryContext(ctx, args)
	}
	//lint:ignore SA1019 the driver has nothing newer
	return w.s.Query(values(args))
}

func (w countingStmt) CheckNamedValue(nv *driver.NamedValue) error {
	if c, ok := w.s.(driver.NamedValueChecker); ok {
		return c.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

func values(args []driver.NamedValue) []driver.Value {
	out := make([]driver.Value, len(args))
	for i, a := range args {
		out[i] = a.Value
	}
	return out
}

type countingTx struct {
	t driver.Tx
	n *Meter
}

func (w countingTx) Commit() error   { return w.n.commit(w.t.Commit) }
func (w countingTx) Rollback() error { w.n.n.Add(1); return w.t.Rollback() }

// Named is args numbered as database/sql numbers them.
func Named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}
