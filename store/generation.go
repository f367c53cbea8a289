package store

import (
	"context"
	"database/sql"
	"strconv"
	"sync"
)

// Generation is a token that changes whenever anything is committed to the
// database, by this process or any other: a long-lived reader may keep what
// it read while the token it read first is unchanged. "" means the
// database cannot say (then nothing may be kept).
//
// Read the token before the data it guards: a commit between the two then
// shows as a new token at the next call, so a kept answer is at worst
// re-read once too often, never kept past a change.
//
// SQLite: PRAGMA data_version on a connection of its own that never
// writes, which changes whenever another connection — this process's pool
// or another process — commits. PostgreSQL: the WAL insert position, which
// every commit of the cluster moves (a commit elsewhere in a shared
// cluster costs a re-read, never a stale answer).
func (s *Store) Generation(ctx context.Context) (string, error) {
	if s.postgres {
		var lsn string
		if err := s.db.QueryRowContext(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
			return "", nil // a standby has no insert position: keep nothing
		}
		return lsn, nil
	}
	return s.probe.dataVersion(ctx, s.db.DB)
}

// generationProbe holds SQLite's data_version connection.
type generationProbe struct {
	mu   sync.Mutex
	conn *sql.Conn
	// epoch counts the connections opened: data_version is a counter of
	// one connection, so a new connection's value may repeat an old one's.
	epoch int
}

func (p *generationProbe) dataVersion(ctx context.Context, db *sql.DB) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn == nil {
		c, err := db.Conn(ctx)
		if err != nil {
			return "", err
		}
		p.conn = c
		p.epoch++
	}
	var v int64
	if err := p.conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v); err != nil {
		p.conn.Close() // a broken connection: the next call opens another
		p.conn = nil
		return "", err
	}
	return strconv.Itoa(p.epoch) + ":" + strconv.FormatInt(v, 10), nil
}

func (p *generationProbe) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		p.conn.Close()
		p.conn = nil
	}
}
