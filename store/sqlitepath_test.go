package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A SQLite store is the file its path names, taken literally: a '%', '?'
// or '#' in it is part of a name, not a URI's escape, query or fragment.
// Read as a URI, "sub/%2e%2e/x.db" opened a database outside sub,
// "x.db#y" dropped the pragmas after it (synchronous FULL, foreign keys,
// the busy timeout), and "x.db?_pragma=…" set pragmas of its own.
func TestSQLitePathTakenLiterally(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"sub/%2e%2e/pct.db", "h.db#frag", "q.db?_pragma=foreign_keys(0)", "m.db?mode=memory", "50%.db"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			os.Mkdir(filepath.Join(dir, "sub"), 0o755)
			dsn := filepath.Join(dir, name)
			s, err := Open(ctx, dsn, "h")
			if err != nil {
				t.Fatalf("open %s: %v", dsn, err)
			}
			var fk, sync int
			if err := s.SQL.GetContext(ctx, &fk, `PRAGMA foreign_keys`); err != nil {
				t.Fatal(err)
			}
			if err := s.SQL.GetContext(ctx, &sync, `PRAGMA synchronous`); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if fk != 1 || sync != 2 {
				t.Errorf("foreign_keys %d, synchronous %d; want 1 and 2 (FULL)", fk, sync)
			}
			if _, err := os.Stat(dsn); err != nil {
				t.Errorf("the database named: %v", err)
			}
			entries, _ := os.ReadDir(filepath.Dir(dsn))
			for _, e := range entries {
				if p := filepath.Join(filepath.Dir(dsn), e.Name()); p != dsn && p != dsn+"-wal" && p != dsn+"-shm" && e.Name() != "sub" {
					t.Errorf("%s made beside the database named", p)
				}
			}
			if entries, _ := os.ReadDir(dir); filepath.Dir(dsn) != dir && len(entries) != 1 {
				t.Errorf("made in %s besides sub: %v", dir, entries)
			}
		})
	}
}

// A path that starts with "//" is the root directory's, as Linux reads it,
// not a URI naming a host: the store opens (and reopens read-only) there.
func TestSQLitePathWithTwoLeadingSlashes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dsn := "/" + filepath.Join(dir, "slash.db")
	s, err := Open(ctx, dsn, "h")
	if err != nil {
		t.Fatalf("open %s: %v", dsn, err)
	}
	s.Close()
	if _, err := os.Stat(filepath.Join(dir, "slash.db")); err != nil {
		t.Errorf("the database named: %v", err)
	}
	ro, err := OpenReadOnly(ctx, dsn, "h")
	if err != nil {
		t.Fatalf("open %s read-only: %v", dsn, err)
	}
	ro.Close()
}
