package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lib/pq"
	"github.com/xfsq/xfsq/store/internal/base"
	"golang.org/x/sys/unix"
)

// Bounding PostgreSQL: lib/pq waits on its socket for as long as the
// kernel lets it, and a cancelled context only makes it send the server a
// cancel request, over a new connection, which a blackholed link drops
// too. So every connection is made by a dialer of ours (keepalives,
// TCP_USER_TIMEOUT) and reads through boundedConn, whose every read and
// write has a deadline (ReadBound), and which a call's context cuts the
// moment it ends (guard): the call then returns an UnreachableError at its
// deadline, whatever the network does.

// openPostgres is a pool of bounded connections to the database cfg names.
func openPostgres(cfg pq.Config, o PostgresOptions, counter *base.Meter) (*sql.DB, error) {
	pc, err := pq.NewConnectorConfig(cfg)
	if err != nil {
		return nil, err
	}
	c := &pgConnector{pq: pc, o: o, addr: addrOf(cfg)}
	pc.Dialer(dialer{o: o})
	db := sql.OpenDB(base.Counting(c, counter))
	db.SetMaxOpenConns(o.PoolMaxOpen)
	db.SetMaxIdleConns(o.PoolMaxIdle)
	return db, nil
}

// addrOf is where cfg points, for messages: host:port (or the socket's
// directory), never a password.
func addrOf(cfg pq.Config) string {
	host := cfg.Host
	if cfg.Hostaddr.IsValid() {
		host = cfg.Hostaddr.String()
	}
	if strings.HasPrefix(host, "/") || strings.HasPrefix(host, "@") {
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(int(cfg.Port)))
}

// dialer makes TCP connections with keepalives and TCP_USER_TIMEOUT, and
// hands each to the Connect that asked for it (dialSlot).
type dialer struct{ o PostgresOptions }

func (d dialer) netDialer() *net.Dialer {
	nd := &net.Dialer{KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: d.o.KeepaliveIdle,
		Interval: d.o.KeepaliveInterval, Count: d.o.KeepaliveCount}}
	ms := int(d.o.UserTimeout.Milliseconds())
	nd.Control = func(network, _ string, rc syscall.RawConn) error {
		if !strings.HasPrefix(network, "tcp") {
			return nil
		}
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, ms)
		}); err != nil {
			return err
		}
		return serr
	}
	return nd
}

func (d dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.netDialer().DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	bc := &boundedConn{Conn: c, bound: d.o.ReadBound()}
	if slot, ok := ctx.Value(dialSlotKey{}).(*dialSlot); ok {
		slot.set(bc)
	}
	return bc, nil
}

func (d dialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}

func (d dialer) DialTimeout(network, addr string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return d.DialContext(ctx, network, addr)
}

// boundedConn is a connection whose every read and write waits at most
// bound, or until the deadline lib/pq set (its connect_timeout), and none
// at all once cut.
type boundedConn struct {
	net.Conn
	bound time.Duration

	mu    sync.Mutex
	fixed time.Time // lib/pq's own deadline; zero: none
	cut   bool
}

var longAgo = time.Unix(1, 0)

func (c *boundedConn) arm(set func(time.Time) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := time.Now().Add(c.bound)
	if c.cut {
		d = longAgo
	} else if !c.fixed.IsZero() && c.fixed.Before(d) {
		d = c.fixed
	}
	return set(d)
}

func (c *boundedConn) Read(p []byte) (int, error) {
	if err := c.arm(c.Conn.SetReadDeadline); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

func (c *boundedConn) Write(p []byte) (int, error) {
	if err := c.arm(c.Conn.SetWriteDeadline); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

func (c *boundedConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fixed = t
	return nil
}
func (c *boundedConn) SetReadDeadline(t time.Time) error  { return c.SetDeadline(t) }
func (c *boundedConn) SetWriteDeadline(t time.Time) error { return c.SetDeadline(t) }

// cutNow fails the read or write in progress, and every later one: the
// protocol is then out of step, and the connection is never used again.
func (c *boundedConn) cutNow() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = true
	c.Conn.SetDeadline(longAgo)
}

func (c *boundedConn) wasCut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cut
}

// dialSlot carries the connection a Connect dialled from the dialer back
// to it, through the context lib/pq dials with; a Connect whose context
// ends cuts it, dialled yet or not.
type dialSlot struct {
	mu   sync.Mutex
	conn *boundedConn
	cut  bool
}

type dialSlotKey struct{}

func (s *dialSlot) set(c *boundedConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conn = c
	if s.cut {
		c.cutNow()
	}
}

func (s *dialSlot) cutNow() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cut = true
	if s.conn != nil {
		s.conn.cutNow()
	}
}

// pgConnector opens lib/pq connections through dialer, each a guardedConn.
type pgConnector struct {
	pq   *pq.Connector
	o    PostgresOptions
	addr string
}

func (c *pgConnector) Driver() driver.Driver { return c.pq.Driver() }

func (c *pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	slot := &dialSlot{}
	ctx, end, budget, err := c.guard(context.WithValue(ctx, dialSlotKey{}, slot), slot.cutNow, c.o.ConnectTimeout)
	if err != nil {
		return nil, err
	}
	defer end()
	dc, err := c.pq.Connect(ctx)
	if err != nil {
		return nil, c.fail(ctx, err, slot.cut, budget)
	}
	slot.mu.Lock()
	bc := slot.conn
	slot.mu.Unlock()
	if bc == nil {
		dc.Close()
		return nil, errors.New("connect to the database: lib/pq made a connection without xfsq's dialer")
	}
	return &guardedConn{Conn: dc, net: bc, c: c}, nil
}

// guard gives ctx a deadline when it has none (the call's budget,
// at most limit), or what is left of the request's budget (WithBudget)
// when that is sooner, and cuts the connection the moment ctx ends; end
// stops that, charges the call's time to the request's budget, and must
// be called when the call is over. A request whose budget is spent gets
// its UnreachableError here, before anything is sent.
func (c *pgConnector) guard(ctx context.Context, cut func(), limit time.Duration) (context.Context, func(), time.Duration, error) {
	budget := c.o.CallBudget()
	if limit > 0 && limit < budget {
		budget = limit
	}
	dl, hasDeadline := ctx.Deadline()
	if hasDeadline {
		budget = time.Until(dl)
	}
	req := base.BudgetOf(ctx)
	if req != nil {
		left := req.Remaining()
		if left <= 0 {
			return ctx, func() {}, 0, req.Spent(c.addr)
		}
		if left < budget {
			budget, hasDeadline = left, false
		}
	}
	cancel := context.CancelFunc(func() {})
	if !hasDeadline {
		ctx, cancel = context.WithTimeout(ctx, budget)
	}
	stop := context.AfterFunc(ctx, cut)
	start := time.Now()
	return ctx, func() {
		stop()
		cancel()
		if req != nil {
			d := time.Since(start)
			req.Charge(d)
			base.ChargedCall(ctx, d)
		}
	}, budget, nil
}

// fail is err as the call saw it: an UnreachableError when the server
// could not be reached, the context's own error when the caller gave up.
func (c *pgConnector) fail(ctx context.Context, err error, cut bool, budget time.Duration) error {
	if err == nil || errors.Is(err, io.EOF) {
		return err
	}
	if errors.Is(context.Cause(ctx), context.Canceled) {
		return context.Cause(ctx)
	}
	if u := base.AsUnreachable(err, c.addr, cut || ctx.Err() != nil, budget); u != nil {
		return u
	}
	return err
}

// guardedConn is a lib/pq connection whose every call is bounded (guard).
type guardedConn struct {
	driver.Conn // lib/pq's, which is its own driver.Tx
	net         *boundedConn
	c           *pgConnector
}

func (g *guardedConn) guard(ctx context.Context) (context.Context, func(), time.Duration, error) {
	return g.c.guard(ctx, g.net.cutNow, 0)
}

func (g *guardedConn) fail(ctx context.Context, err error, budget time.Duration) error {
	if err == nil { // every row's Next: errors.As below allocates its target
		return nil
	}
	err = g.c.fail(ctx, err, g.net.wasCut(), budget)
	var u *UnreachableError
	if errors.As(err, &u) {
		g.net.cutNow() // out of step: never used again
	}
	return err
}

func (g *guardedConn) Prepare(q string) (driver.Stmt, error) {
	return g.PrepareContext(context.Background(), q)
}

func (g *guardedConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	ctx, end, budget, err := g.guard(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	st, err := g.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
	if err != nil {
		return nil, g.fail(ctx, err, budget)
	}
	return &guardedStmt{Stmt: st, g: g}, nil
}

func (g *guardedConn) Begin() (driver.Tx, error) {
	return g.BeginTx(context.Background(), driver.TxOptions{})
}

func (g *guardedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	bctx, end, budget, err := g.guard(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	// lib/pq watches the context it begins with until the transaction
	// ends: the caller's, not this call's budget.
	tx, err := g.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, g.fail(bctx, err, budget)
	}
	return &guardedTx{Tx: tx, g: g, ctx: context.WithoutCancel(ctx)}, nil
}

func (g *guardedConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	ctx, end, budget, err := g.guard(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := g.Conn.(driver.QueryerContext).QueryContext(ctx, q, args)
	if err != nil {
		err = g.fail(ctx, err, budget) // before end cancels ctx: fail reads it
		end()
		return nil, err
	}
	return &guardedRows{Rows: rows, g: g, ctx: ctx, end: end, budget: budget}, nil
}

func (g *guardedConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	ctx, end, budget, err := g.guard(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	r, err := g.Conn.(driver.ExecerContext).ExecContext(ctx, q, args)
	return r, g.fail(ctx, err, budget)
}

func (g *guardedConn) Ping(ctx context.Context) error {
	ctx, end, budget, err := g.guard(ctx)
	if err != nil {
		return err
	}
	defer end()
	return g.fail(ctx, g.Conn.(driver.Pinger).Ping(ctx), budget)
}

func (g *guardedConn) CheckNamedValue(nv *driver.NamedValue) error {
	return g.Conn.(driver.NamedValueChecker).CheckNamedValue(nv)
}

func (g *guardedConn) ResetSession(ctx context.Context) error {
	if g.net.wasCut() {
		return driver.ErrBadConn
	}
	return g.Conn.(driver.SessionResetter).ResetSession(ctx)
}

func (g *guardedConn) IsValid() bool {
	return !g.net.wasCut() && g.Conn.(driver.Validator).IsValid()
}

func (g *guardedConn) Close() error {
	_, end, _, _ := g.guard(context.Background())
	defer end()
	return g.Conn.Close()
}

// guardedTx ends a transaction within a budget of its own, under the
// context that began it (Commit and Rollback take none).
type guardedTx struct {
	driver.Tx
	g   *guardedConn
	ctx context.Context
}

func (t *guardedTx) Commit() error {
	ctx, end, budget, err := t.g.guard(t.ctx)
	if err != nil {
		t.g.net.cutNow() // never committed: the server rolls it back with the connection
		return err
	}
	defer end()
	return t.g.fail(ctx, t.Tx.Commit(), budget)
}

func (t *guardedTx) Rollback() error {
	ctx, end, budget, err := t.g.guard(t.ctx)
	if err != nil {
		t.g.net.cutNow() // the server rolls it back with the connection
		return driver.ErrBadConn
	}
	defer end()
	return t.g.fail(ctx, t.Tx.Rollback(), budget)
}

// guardedStmt bounds a prepared statement's calls as guardedConn's.
type guardedStmt struct {
	driver.Stmt
	g *guardedConn
}

func (s *guardedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	ctx, end, budget, err := s.g.guard(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	r, err := s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	return r, s.g.fail(ctx, err, budget)
}

func (s *guardedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	ctx, end, budget, err := s.g.guard(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		err = s.g.fail(ctx, err, budget) // before end cancels ctx: fail reads it
		end()
		return nil, err
	}
	return &guardedRows{Rows: rows, g: s.g, ctx: ctx, end: end, budget: budget}, nil
}

func (s *guardedStmt) Close() error {
	_, end, _, _ := s.g.guard(context.Background())
	defer end()
	return s.Stmt.Close()
}

// guardedRows keeps the query's bound until the rows are closed: lib/pq
// reads them from the socket as they are asked for.
type guardedRows struct {
	driver.Rows
	g      *guardedConn
	ctx    context.Context
	end    func()
	budget time.Duration
	once   sync.Once
}

func (r *guardedRows) Next(dest []driver.Value) error {
	return r.g.fail(r.ctx, r.Rows.Next(dest), r.budget)
}

func (r *guardedRows) Close() error {
	err := r.g.fail(r.ctx, r.Rows.Close(), r.budget)
	r.once.Do(r.end)
	return err
}
