package store

import (
	"context"
	"time"

	"github.com/xfsq/xfsq/store/internal/base"
)

// The store's vocabulary declared beneath it (store/internal/...), named
// here so that callers speak only store.

type (
	// UnreachableError is a PostgreSQL store this process cannot reach now.
	UnreachableError = base.UnreachableError
	// Lock is a mutex whose LockWithin wait is bounded by a request's budget.
	Lock = base.Lock
)

// WithBudget is ctx whose store calls together wait at most d.
func WithBudget(ctx context.Context, d time.Duration) context.Context { return base.WithBudget(ctx, d) }

// BudgetLeft is what is left of ctx's budget, and whether it has one.
func BudgetLeft(ctx context.Context) (time.Duration, bool) { return base.BudgetLeft(ctx) }
