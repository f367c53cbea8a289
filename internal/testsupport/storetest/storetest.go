// Package storetest gives tests a fresh database on every driver xfsq
// supports: SQLite always, PostgreSQL when XFSQ_TEST_POSTGRES holds a DSN
// (required under CI=true). Each PostgreSQL test gets a schema of its own,
// dropped afterwards, so tests never see each other's rows.
package storetest

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/lib/pq"

	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// EnvPostgres names the variable holding the PostgreSQL DSN for tests.
const EnvPostgres = "XFSQ_TEST_POSTGRES"

// EnvSkipReport names a file to which every PostgreSQL test skipped for
// want of a DSN appends a line (its package directory and name):
// scripts/test.sh lists them at the end, since go test shows a passing
// package's skips only with -v.
const EnvSkipReport = "XFSQ_TEST_SKIP_REPORT"

func noteSkipped(t testing.TB) {
	path := os.Getenv(EnvSkipReport)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s\n", prereq.PackageDir(), t.Name())
}

// Driver is one database to run a test against.
type Driver struct {
	Name string
	// DSN opens a fresh, empty database for t.
	DSN func(t testing.TB) string
}

// Drivers lists SQLite and, when configured, PostgreSQL.
func Drivers() []Driver {
	return []Driver{
		{Name: "sqlite", DSN: func(t testing.TB) string { return filepath.Join(t.TempDir(), "xfsq.db") }},
		{Name: "postgres", DSN: Postgres},
	}
}

// ForEach runs fn as a subtest per driver.
func ForEach(t *testing.T, fn func(t *testing.T, dsn string)) {
	for _, d := range Drivers() {
		t.Run(d.Name, func(t *testing.T) { fn(t, d.DSN(t)) })
	}
}

// made makes a PostgreSQL object of kind (SCHEMA, DATABASE) of a fresh
// name beginning prefix on base, dropped (with dropOpts) when t ends.
func made(t testing.TB, base, kind, prefix, dropOpts string) string {
	t.Helper()
	db, err := sql.Open("postgres", base)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b := make([]byte, 6)
	rand.Read(b)
	name := prefix + hex.EncodeToString(b)
	if _, err := db.Exec("CREATE " + kind + " " + name); err != nil {
		t.Fatalf("PostgreSQL at %s: %v", EnvPostgres, err)
	}
	t.Cleanup(func() {
		if db, err := sql.Open("postgres", base); err == nil {
			db.Exec("DROP " + kind + " IF EXISTS " + name + " " + dropOpts)
			db.Close()
		}
	})
	return name
}

// Postgres opens a fresh PostgreSQL schema for a test of what only
// PostgreSQL does (concurrent commits); like ForEach's, it fails under
// CI=true when XFSQ_TEST_POSTGRES is unset.
func Postgres(t testing.TB) string {
	base := os.Getenv(EnvPostgres)
	if base == "" {
		noteSkipped(t)
		msg := "PostgreSQL tests need " + EnvPostgres + "=postgres://user:pass@127.0.0.1/db?sslmode=disable (see .ci/run)"
		prereq.Missing(t, msg)
	}
	schema := made(t, base, "SCHEMA", "t_", "CASCADE")
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	// lib/pq passes unknown parameters on as run-time settings.
	return base + sep + "search_path=" + schema
}
