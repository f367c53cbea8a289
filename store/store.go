// Package store owns xfsq's persistent state: projects and their trees (with
// project IDs and limits), the project-ID registry, the append-only event
// journal, settings and leases. One schema and one set of migrations serve
// embedded SQLite (the default, at <root>/.xfsq/xfsq.db) and PostgreSQL (the
// production choice, shared by several hosts).
//
// It must never touch the filesystem beyond its own database file, and never
// store a secret: an event's actor is a user or token name only.
package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/xfsq/xfsq/store/internal/base"
	"github.com/xfsq/xfsq/store/internal/migrations"
	"github.com/xfsq/xfsq/store/internal/sweeps"
	"golang.org/x/sys/unix"
	_ "modernc.org/sqlite"
)

// Store is a handle on the database; safe for concurrent use.
type Store struct {
	*sweeps.Store      // the areas, each above the one it stands on (levels.go)
	readOnly      bool // see OpenReadOnly
	bounds        PostgresOptions
}

// Open connects to dsn (a postgres:// URL or libpq keywords, or the path of
// a SQLite file, created if missing) and brings the schema up to date. No
// error it returns holds a password of dsn.
func Open(ctx context.Context, dsn, host string) (*Store, error) {
	kind, err := Classify(dsn)
	if err != nil {
		return nil, err
	}
	s := newStore(&base.DB{Host: host, Postgres: kind != KindSQLite})
	if s.Postgres {
		pg, err := postgresDSN(dsn, kind)
		if err != nil {
			return nil, err
		}
		cfg, opts, err := postgresConfig(pg)
		if err != nil {
			return nil, err
		}
		db, err := openPostgres(cfg, opts, &s.Meter)
		if err != nil {
			return nil, fmt.Errorf("database %s: %w", Redact(dsn), scrub(err, dsn))
		}
		s.SQL, s.bounds, s.Addr, s.Prepare = sqlx.NewDb(db, "postgres"), opts, addrOf(cfg), opts.Prepare
	} else {
		if err := os.MkdirAll(filepath.Dir(dsn), 0o700); err != nil {
			if errors.Is(err, os.ErrPermission) {
				return nil, needsOwner(dsn, err)
			}
			return nil, fmt.Errorf("create the directory of the database %s: %w", dsn, err)
		}
		// SQLite says only "unable to open database file (14)" when the
		// file or its directory is not ours to read and write.
		if err := unix.Access(dsn, unix.R_OK|unix.W_OK); errors.Is(err, unix.EACCES) {
			return nil, needsOwner(dsn, err)
		}
		if err := unix.Access(filepath.Dir(dsn), unix.W_OK|unix.X_OK); errors.Is(err, unix.EACCES) {
			return nil, needsOwner(dsn, err)
		}
		// WAL lets readers run beside one writer; _txlock=immediate makes every
		// transaction take the write lock at BEGIN, so read-then-write
		// transactions (ID allocation, reservations) are serialised across
		// processes instead of failing at commit.
		//
		// synchronous(FULL) syncs the WAL at every commit: a journal record
		// (a sweep's "pending" above all) is on disk before the deletion it
		// announces, power loss or not. NORMAL would only survive a crash of
		// the process.
		s.SQL = openSQLite(&s.Meter, sqliteURI(dsn,
			"_pragma=busy_timeout(15000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(FULL)&_txlock=immediate"))
		if err != nil {
			return nil, err
		}
	}
	if !s.Postgres {
		// A server's requests each hold a connection for a moment;
		// database/sql keeps two idle, so under 32 concurrent requests most
		// of them opened a connection (on SQLite a file, its pragmas, its
		// prepared statements) and closed it again, and a check beside a
		// snapshot pass waited tens of milliseconds for that. PoolIdle idle
		// ones, closed after a minute unused, keep the pool warm under load
		// and small after it.
		s.SQL.SetMaxIdleConns(PoolIdle)
	}
	// PostgreSQL's pool is sized by the DSN (PostgresOptions: pool_max_open,
	// pool_max_idle): hosts share the server's max_connections
	// (docs/fleet.md), and 50 concurrent uploads on one host once made the
	// server answer "too many clients" to every host. Past the bound a
	// request waits for a connection, within its budget. No transaction of
	// the store asks for a second connection while it holds one, so the
	// bound cannot deadlock.
	s.SQL.SetConnMaxIdleTime(time.Minute)
	if err := s.connect(ctx); err != nil {
		s.SQL.Close()
		return nil, fmt.Errorf("connect to the database %s: %w", Redact(dsn), scrub(err, dsn))
	}
	if err := migrations.Migrate(ctx, s.DB); err != nil {
		s.SQL.Close()
		return nil, fmt.Errorf("migrate the database %s: %w", Redact(dsn), scrub(err, dsn))
	}
	return s, nil
}

// connect makes the pool's first connection. On SQLite that is opening
// the file and running the DSN's pragmas, which already fail as a ping
// would; the ping's own statement ("select 1") would tell nothing more.
// PostgreSQL is pinged: a connection can be made by a server that then
// answers nothing.
func (s *Store) connect(ctx context.Context) error {
	if s.Postgres {
		return s.SQL.PingContext(ctx)
	}
	c, err := s.SQL.Conn(ctx)
	if err != nil {
		return err
	}
	return c.Close() // back to the pool, open
}

// PoolIdle is how many connections a SQLite store's pool keeps open while
// unused.
const PoolIdle = 16

// Bounds are the waits and pool size a PostgreSQL store was opened with
// (the zero value for SQLite, whose waits are its busy_timeout).
func (s *Store) Bounds() PostgresOptions { return s.bounds }

// Driver names the database kind: "sqlite" or "postgres".
func (s *Store) Driver() string {
	if s.Postgres {
		return "postgres"
	}
	return "sqlite"
}

// Close closes the database.
func (s *Store) Close() error {
	return s.Store.Close()
}

func toMicros(t time.Time) int64    { return base.ToMicros(t) }
func fromMicros(us int64) time.Time { return base.FromMicros(us) }

// AsStored is t as the store gives it back: to the microsecond, in UTC.
func AsStored(t time.Time) time.Time { return fromMicros(toMicros(t)) }

// ErrNotFound is wrapped when a row asked for does not exist.
var ErrNotFound = base.ErrNotFound

// PermissionError is a SQLite store this user may not open: it names who
// may, instead of SQLite's "unable to open database file (14)".
type PermissionError struct {
	Path string
	Msg  string
	Err  error
}

func (e *PermissionError) Error() string { return e.Msg }
func (e *PermissionError) Unwrap() error { return e.Err }

// needsOwner says who may open the store at dsn: its owner (or that of
// its directory, when the file cannot be seen), and its group when the
// group may read and write it.
func needsOwner(dsn string, err error) error {
	var st unix.Stat_t
	if unix.Stat(dsn, &st) != nil && unix.Stat(filepath.Dir(dsn), &st) != nil {
		return &PermissionError{Path: dsn, Err: err, Msg: fmt.Sprintf("the store %s cannot be opened by this user (%v): run xfsq as root", dsn, err)}
	}
	who := "uid " + strconv.Itoa(int(st.Uid))
	if u, uerr := user.LookupId(strconv.Itoa(int(st.Uid))); uerr == nil {
		who = u.Username
	}
	if st.Mode&0o060 == 0o060 {
		if g, gerr := user.LookupGroupId(strconv.Itoa(int(st.Gid))); gerr == nil {
			who += " (or group " + g.Name + ")"
		}
	}
	me := "uid " + strconv.Itoa(os.Getuid())
	if u, uerr := user.Current(); uerr == nil {
		me = u.Username
	}
	return &PermissionError{Path: dsn, Err: err,
		Msg: fmt.Sprintf("the store %s needs %s to open; you are %s: run xfsq as %s, e.g. with sudo", dsn, who, me, strings.Fields(who)[0])}
}

// sqliteURI is the SQLite database at path as the driver's file: URI with
// query. The path is escaped: read as a URI, a '%', '?' or '#' in it would
// name another file, or set or drop pragmas. And one that starts with "//"
// (the root directory to Linux) is given one slash, or SQLite would read
// what follows as the URI's authority, a host, and refuse it.
func sqliteURI(path, query string) string {
	if strings.HasPrefix(path, "//") {
		path = "/" + strings.TrimLeft(path, "/")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + query
}
