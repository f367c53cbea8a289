package registry

import (
	"context"
	"database/sql"
	"strconv"
	"sync"
	"time"

	"github.com/xfsq/xfsq/store/internal/base"
)

// Generation is a token that changes whenever anything is committed to the
// database, by this process or any other: a long-lived reader may keep what
// it read while the token it read first is unchanged. The zero token
// means the database cannot say (then nothing may be kept).
//
// Read the token before the data it guards: a commit between the two then
// shows as a new token at the next call, so a kept answer is at worst
// re-read once too often, never kept past a change.
//
// SQLite: PRAGMA data_version on a connection of its own that never
// writes, which changes whenever another connection — this process's pool
// or another process — commits. PostgreSQL: the current snapshot
// (xmin:xmax:in-progress ids), which changes exactly when a transaction of
// the cluster ends: a commit is visible to whatever reads after the token
// moved (a commit elsewhere in a shared cluster costs a re-read, never a
// stale answer). Not a WAL position: the insert position moves when the
// commit record is written, before the commit is visible, so a probe in
// between took the new token while the reads under it still saw the old
// data, and kept that until the cluster next wrote WAL — seconds on a
// quiet one.
//
// This process's own commits move it at once (a counter InTx bumps); the
// database is asked at most once per GenerationLag, so that a server
// answering thousands of checks a second does not queue them all on one
// probe: another process's commit is seen within GenerationLag.
func (s *Store) Generation(ctx context.Context) (Generation, error) {
	probed, err := s.probe.get(ctx, s)
	if probed == "" || err != nil {
		return Generation{}, err
	}
	return Generation{commits: s.Committed.Load(), db: probed}, nil
}

// Generation is what Store.Generation answers: comparable with ==, and
// made without allocating, since every cached read asks for one. The zero
// Generation is the database not saying.
type Generation struct {
	commits uint64 // this process's own commits (InTx)
	db      string // the database's answer, as last probed (shared, not copied)
}

// Known reports whether the generation may guard a kept answer.
func (g Generation) Known() bool { return g.db != "" }

// Lag is how long a probe of the database's generation is
// reused: the store's GenerationLag, which its callers' tests set, read
// through this so that the store, above this area, keeps owning it.
var Lag = func() time.Duration { return time.Millisecond }

// ask reads the database's own generation.
func (s *Store) ask(ctx context.Context, p *generationProbe) (string, error) {
	if s.Postgres {
		snap, err := base.BoundedRead(ctx, s.DB, func(ctx context.Context) (snap string, err error) {
			return snap, s.SQL.QueryRowContext(ctx, `SELECT pg_current_snapshot()::text`).Scan(&snap)
		})
		if err != nil {
			return "", nil // keep nothing
		}
		return snap, nil
	}
	return p.dataVersion(ctx, s.SQL.DB)
}

// get returns the last probe if it is younger than GenerationLag, else
// probes again.
func (p *generationProbe) get(ctx context.Context, s *Store) (string, error) {
	p.mu.Lock()
	if p.last != "" && time.Since(p.at) < Lag() {
		defer p.mu.Unlock()
		return p.last, nil
	}
	if s.Postgres {
		// Not asked under p.mu: callers waiting on the lock while one
		// asks a stalled store waited out its budget and then their own,
		// one after another. The newest probe to begin is kept.
		p.mu.Unlock()
		start := time.Now()
		g, _ := s.ask(ctx, p)
		p.mu.Lock()
		defer p.mu.Unlock()
		if !start.Before(p.at) {
			p.last, p.at = g, start
		}
		return g, nil
	}
	defer p.mu.Unlock()
	g, err := s.ask(ctx, p)
	p.last, p.at = g, time.Now()
	if err != nil {
		p.last = ""
	}
	return g, err
}

// generationProbe holds SQLite's data_version connection.
type generationProbe struct {
	mu   sync.Mutex
	last string    // the last answer, "" when none may be reused
	at   time.Time // when it was asked
	conn *sql.Conn
	// version is PRAGMA data_version prepared on conn: asked up to a
	// thousand times a second, it is parsed once per connection.
	version *sql.Stmt
	// epoch counts the connections opened: data_version is a counter of
	// one connection, so a new connection's value may repeat an old one's.
	epoch int
}

// dataVersion is SQLite's; p.mu is held.
func (p *generationProbe) dataVersion(ctx context.Context, db *sql.DB) (string, error) {
	if p.conn == nil {
		c, err := db.Conn(ctx)
		if err != nil {
			return "", err
		}
		stmt, err := c.PrepareContext(ctx, `PRAGMA data_version`)
		if err != nil {
			c.Close()
			return "", err
		}
		p.conn, p.version = c, stmt
		p.epoch++
	}
	var v int64
	if err := p.version.QueryRowContext(ctx).Scan(&v); err != nil {
		p.closeConn() // a broken connection: the next call opens another
		return "", err
	}
	return strconv.Itoa(p.epoch) + ":" + strconv.FormatInt(v, 10), nil
}

func (p *generationProbe) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeConn()
}

// closeConn closes the probe's connection and statement; p.mu is held.
func (p *generationProbe) closeConn() {
	if p.conn != nil {
		p.version.Close()
		p.conn.Close()
		p.conn, p.version = nil, nil
	}
}
