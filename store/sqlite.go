package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/xfsq/xfsq/store/internal/base"
	"modernc.org/sqlite"
)

// SQLite spells its result codes into its messages ("database is locked
// (5) (SQLITE_BUSY)", "unable to open database file (14)"): a code is for
// this package to decide by (Full), not for an operator to read, and no
// shell should have to scrub it out of a message. Every SQLite connection
// the store opens goes through plainConn, which hands each of SQLite's
// errors back as a *DatabaseError worded without them.

// DatabaseError is a failure SQLite reported, its message without the
// result codes; the *sqlite.Error stays beneath it (errors.As), so that
// what is decided by code (Full) still is.
type DatabaseError struct {
	err  error // SQLite's, or one wrapping it
	code int
}

func (e *DatabaseError) Error() string {
	msg := strings.TrimSuffix(e.err.Error(), " (SQLITE_BUSY)")
	return strings.TrimSuffix(msg, " ("+strconv.Itoa(e.code)+")")
}

func (e *DatabaseError) Unwrap() error { return e.err }

// plain is err with SQLite's codes kept out of its words.
//
// It wraps every call of the driver, rows.Next's io.EOF included: those
// two answers return before the errors.As targets are declared, which
// escape to the heap (two allocations a call, a sixth of an uncached
// admission check's).
func plain(err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	return plainError(err)
}

func plainError(err error) error {
	var lite *sqlite.Error
	var done *DatabaseError
	if !errors.As(err, &lite) || errors.As(err, &done) {
		return err
	}
	return &DatabaseError{err: err, code: lite.Code()}
}

// openSQLite is sqlx.Open("sqlite", dsn), but with plain errors.
func openSQLite(n *base.Meter, dsn string) *sqlx.DB {
	return sqlx.NewDb(sql.OpenDB(base.Counting(connector{dsn: dsn}, n)), "sqlite")
}

// liteDriver is modernc's, constructed rather than the one it registers:
// the store registers no functions or hooks on it.
var liteDriver = &sqlite.Driver{}

type connector struct{ dsn string }

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.Driver().Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return plainDriver{} }

type plainDriver struct{}

func (plainDriver) Open(name string) (driver.Conn, error) {
	c, err := liteDriver.Open(name)
	if err != nil {
		return nil, plain(err)
	}
	return plainConn{c.(liteConn)}, nil
}

// liteConn is what modernc's connection implements, and plainConn passes on.
type liteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

type plainConn struct{ c liteConn }

func (p plainConn) Prepare(q string) (driver.Stmt, error) {
	return p.PrepareContext(context.Background(), q)
}
func (p plainConn) Close() error { return plain(p.c.Close()) }
func (p plainConn) Begin() (driver.Tx, error) {
	return p.BeginTx(context.Background(), driver.TxOptions{})
}
func (p plainConn) BeginTx(ctx context.Context, o driver.TxOptions) (driver.Tx, error) {
	t, err := p.c.BeginTx(ctx, o)
	if err != nil {
		return nil, plain(err)
	}
	return plainTx{t}, nil
}
func (p plainConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	s, err := p.c.PrepareContext(ctx, q)
	if err != nil {
		return nil, plain(err)
	}
	return plainStmt{s.(liteStmt)}, nil
}
func (p plainConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	r, err := p.c.ExecContext(ctx, q, args)
	return r, plain(err)
}
func (p plainConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	r, err := p.c.QueryContext(ctx, q, args)
	if err != nil {
		return nil, plain(err)
	}
	return plainRows{r}, nil
}
func (p plainConn) Ping(ctx context.Context) error         { return plain(p.c.Ping(ctx)) }
func (p plainConn) ResetSession(ctx context.Context) error { return plain(p.c.ResetSession(ctx)) }
func (p plainConn) IsValid() bool                          { return p.c.IsValid() }

type liteStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

type plainStmt struct{ s liteStmt }

func (p plainStmt) Close() error  { return plain(p.s.Close()) }
func (p plainStmt) NumInput() int { return p.s.NumInput() }

// Exec and Query: database/sql calls the context forms; these are the
// interface's, on the same path.
func (p plainStmt) Exec(args []driver.Value) (driver.Result, error) {
	return p.ExecContext(context.Background(), base.Named(args))
}
func (p plainStmt) Query(args []driver.Value) (driver.Rows, error) {
	return p.QueryContext(context.Background(), base.Named(args))
}

func (p plainStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	r, err := p.s.ExecContext(ctx, args)
	return r, plain(err)
}
func (p plainStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	r, err := p.s.QueryContext(ctx, args)
	if err != nil {
		return nil, plain(err)
	}
	return plainRows{r}, nil
}

type plainRows struct{ r driver.Rows }

func (p plainRows) Columns() []string              { return p.r.Columns() }
func (p plainRows) Close() error                   { return plain(p.r.Close()) }
func (p plainRows) Next(dest []driver.Value) error { return plain(p.r.Next(dest)) }

type plainTx struct{ t driver.Tx }

func (p plainTx) Commit() error   { return plain(p.t.Commit()) }
func (p plainTx) Rollback() error { return plain(p.t.Rollback()) }
