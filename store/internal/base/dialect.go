package base

import (
	"context"
	"database/sql"
	"strings"

	"github.com/jmoiron/sqlx"
)

// TreeKey names one tree of this host.
type TreeKey struct{ Project, Area string }

// AdmissionLock serialises admission on this host: the root budget spans
// every tree, so every reservation takes the same lock.
func (t *Tx) AdmissionLock(ctx context.Context) error { return t.Lock(ctx, "admission:"+t.DB.Host) }

// NonNegative is v, or 0 when v is negative.
func NonNegative(v int64) uint64 {
	if v < 0 {
		return 0
	}
	return uint64(v)
}

// Placeholders is n comma-separated copies of row.
func Placeholders(n int, row string) string {
	return strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}

// TreesCTE is a WITH clause naming recs' trees v(project, area).
func TreesCTE(keys []TreeKey, args *[]any) string {
	for _, k := range keys {
		*args = append(*args, k.Project, k.Area)
	}
	return `WITH v (project, area) AS (VALUES ` + Placeholders(len(keys), "(CAST(? AS TEXT), CAST(? AS TEXT))") + `) `
}

// WithoutJIT runs read with PostgreSQL's JIT compilation off, in a
// read-only transaction of its own (SET LOCAL: nothing outlives it, so it
// holds behind PgBouncer in transaction mode); on SQLite it just runs it.
// The planner costs a query by the rows it may visit, lookups it will
// never make included: the fleet's storage (30,000 trees, three lookups a
// tree that a fallback tree never makes) was costed far above
// jit_above_cost, and the server spent ~300 ms compiling a query that ran
// in ~20 ms (docs/benchmarks.md#fleet).
func (s *DB) WithoutJIT(ctx context.Context, read func(sqlx.QueryerContext) error) error {
	if !s.Postgres {
		return read(s.SQL)
	}
	tx, err := s.SQL.BeginTxx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SET LOCAL jit = off`); err != nil {
		return err
	}
	if err := read(tx); err != nil {
		return err
	}
	return tx.Commit()
}
