package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/xfsq/xfsq/store/internal/base"
	"golang.org/x/sys/unix"
)

// Full decides by the code the layer below gives, never by its words.
func TestFullIsDecidedByCode(t *testing.T) {
	db, err := sqlx.Open("sqlite", filepath.Join(t.TempDir(), "full.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// A database capped at a few pages answers SQLITE_FULL as a full disk would.
	db.MustExec(`PRAGMA max_page_count = 4; CREATE TABLE t (b BLOB)`)
	var sqliteFull error
	for i := 0; i < 100 && sqliteFull == nil; i++ {
		_, sqliteFull = db.Exec(`INSERT INTO t VALUES (zeroblob(4096))`)
	}
	if sqliteFull == nil {
		t.Fatal("the capped database never filled")
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"SQLITE_FULL", fmt.Errorf("journal: %w", sqliteFull), true},
		{"ENOSPC", fmt.Errorf("write: %w", unix.ENOSPC), true},
		{"EDQUOT", fmt.Errorf("write: %w", unix.EDQUOT), true},
		{"the words alone", errors.New(sqliteFull.Error()), false},
		{"another failure", unix.EACCES, false},
		{"nil", nil, false},
	} {
		if got := Full(tc.err); got != tc.want {
			t.Errorf("%s (%v): Full = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// SQLite's errors reach the store's callers worded without their result
// codes, and still decided by code beneath (issue 34: no shell scrubs them).
func TestSQLiteErrorsArePlain(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, bytes.Repeat([]byte("not a database "), 512), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dsn, sql, want string
		full                 bool
	}{
		{"full", filepath.Join(dir, "full.db"), `PRAGMA max_page_count = 4; CREATE TABLE IF NOT EXISTS t (b BLOB); INSERT INTO t VALUES (zeroblob(4096))`,
			"database or disk is full", true},
		{"not a database", garbage, `SELECT * FROM sqlite_master`, "file is not a database", false},
		{"cannot open", filepath.Join(dir, "no/such/dir.db"), `SELECT 1`, "unable to open database file", false},
	} {
		db := openSQLite(new(base.Meter), tc.dsn)
		var err error
		for i := 0; i < 100 && err == nil; i++ {
			_, err = db.Exec(tc.sql)
		}
		db.Close()
		var de *DatabaseError
		if !errors.As(err, &de) || err.Error() != tc.want {
			t.Errorf("%s: %T %q; want a *DatabaseError saying %q and no code", tc.name, err, err, tc.want)
		}
		if Full(err) != tc.full {
			t.Errorf("%s: Full = %v, want %v", tc.name, !tc.full, tc.full)
		}
	}
}
