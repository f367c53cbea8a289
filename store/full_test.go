package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/jmoiron/sqlx"
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
