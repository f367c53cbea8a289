package store

import (
	"context"
	"fmt"

	"github.com/xfsq/xfsq/store/internal/base"
	"github.com/xfsq/xfsq/store/internal/migrations"
)

// OpenReadOnly opens an embedded SQLite store for reading only, writing
// nothing at all — no -shm or -wal file, no migration — so that the
// commands an operator reads with still work when the filesystem holding
// the store is full (a normal open needs room for SQLite's shared-memory
// index before it can read a byte). Without its locks it may miss a write
// that another process is making at that moment; on a full disk there are
// none to miss. A PostgreSQL store lives on its own server's disk: it is
// opened as usual.
func OpenReadOnly(ctx context.Context, dsn, host string) (*Store, error) {
	if IsPostgres(dsn) {
		return Open(ctx, dsn, host)
	}
	s := newStore(&base.DB{Host: host})
	s.readOnly = true
	// immutable=1: no locks and no shared memory, the only way SQLite reads
	// a WAL database without creating files; the WAL is empty once its last
	// writer has closed (it checkpoints), which on a full disk it has.
	s.SQL = openSQLite(&s.Meter, sqliteURI(dsn, "mode=ro&immutable=1&_pragma=foreign_keys(1)"))
	var current int
	if err := s.SQL.GetContext(ctx, &current, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`); err != nil {
		s.SQL.Close()
		return nil, fmt.Errorf("read the database %s: %w", dsn, err)
	}
	if current > migrations.SchemaVersion() {
		if err := migrations.CheckNewer(ctx, s.DB, current); err != nil {
			s.SQL.Close()
			return nil, err
		}
	} else if current != migrations.SchemaVersion() {
		s.SQL.Close()
		return nil, fmt.Errorf("the database %s is at schema version %d, this xfsq reads %d: it cannot migrate it read-only; free space, then run any command", dsn, current, migrations.SchemaVersion())
	}
	return s, nil
}

// ReadOnly reports whether the store was opened by OpenReadOnly (and is
// SQLite): every write to it fails.
func (s *Store) ReadOnly() bool { return s.readOnly }
