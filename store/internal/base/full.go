package base

import (
	"errors"

	"golang.org/x/sys/unix"
	"modernc.org/sqlite"
)

// SQLite's primary result codes a store on a full filesystem answers with:
// it could not write (FULL), its journal or WAL could not grow (IOERR), or
// it could not create the files it writes beside the database (READONLY).
const (
	sqliteReadOnly = 8
	sqliteIOErr    = 10
	sqliteFull     = 13
)

// Full reports whether err is a write that failed for want of room,
// as the layers below say it by code rather than in words: ENOSPC or
// EDQUOT from the kernel, SQLite's FULL, IOERR or READONLY, PostgreSQL's
// class 53 (disk_full, out of memory and the like on its server). It
// says nothing of the filesystem itself: a caller asks it whether it is
// in fact full (project.DiskFull) before blaming it.
func Full(err error) bool {
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
		return true
	}
	var lite *sqlite.Error
	if errors.As(err, &lite) {
		switch lite.Code() & 0xff { // the primary code; extended codes add bits above it
		case sqliteFull, sqliteIOErr, sqliteReadOnly:
			return true
		}
	}
	return false
}
