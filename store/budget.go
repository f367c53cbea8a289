package store

import (
	"context"
	"errors"
	"sync"
	"time"
)

// A request's budget for the store. Each call's own bound (CallBudget,
// ReadBound) is seconds, and a request makes several calls: against a
// blackholed store an upload waited for each in turn, past any budget
// its client had. WithBudget gives a request one budget that all its
// calls draw on: the time spent in them (making a connection, waiting for
// one from the pool, each statement and the rows it returns, the commit)
// is charged to it, every call's deadline is what is left, and a call
// made once it is spent fails at once with an UnreachableError, without
// touching the network. It bounds PostgreSQL only: SQLite is a local file,
// bounded by its busy_timeout.

type budgetKey struct{}

// waitBudget is what is left of a request's budget. Calls made at the
// same time are each charged their own time: the budget errs short.
type waitBudget struct {
	mu    sync.Mutex
	total time.Duration
	left  time.Duration
}

// WithBudget is ctx whose store calls together wait at most d. A budget
// already in ctx is kept (the first one set bounds the request); d <= 0
// sets none.
func WithBudget(ctx context.Context, d time.Duration) context.Context {
	if d <= 0 || budgetOf(ctx) != nil {
		return ctx
	}
	return context.WithValue(ctx, budgetKey{}, &waitBudget{total: d, left: d})
}

// BudgetLeft is what is left of ctx's budget, and false when it has none.
func BudgetLeft(ctx context.Context) (time.Duration, bool) {
	b := budgetOf(ctx)
	if b == nil {
		return 0, false
	}
	return b.remaining(), true
}

func budgetOf(ctx context.Context) *waitBudget {
	b, _ := ctx.Value(budgetKey{}).(*waitBudget)
	return b
}

func (b *waitBudget) remaining() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.left
}

func (b *waitBudget) charge(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.left -= d
}

// spent is the error of a call made with no budget left.
func (b *waitBudget) spent(addr string) error {
	return &UnreachableError{Addr: addr, TimedOut: true, Err: context.DeadlineExceeded,
		Why: "did not answer within the request's budget of " + b.total.Round(100*time.Millisecond).String()}
}

// bounded is ctx with a deadline at what is left of its budget, for the
// part of a call database/sql does before the driver sees it (a wait for
// a connection from a full pool); done maps that wait's timeout to an
// UnreachableError and must be called when the call is over (its rows
// closed). Without a budget (or on SQLite) ctx is returned as is.
func (s *Store) bounded(ctx context.Context) (context.Context, func(error) error, error) {
	b := budgetOf(ctx)
	if b == nil || !s.postgres {
		return ctx, func(err error) error { return err }, nil
	}
	left := b.remaining()
	if left <= 0 {
		return ctx, nil, b.spent(s.addr)
	}
	bctx, cancel := context.WithTimeout(ctx, left)
	return bctx, func(err error) error {
		over := bctx.Err() != nil && ctx.Err() == nil
		cancel()
		var u *UnreachableError
		if over && err != nil && !errors.As(err, &u) && errors.Is(err, context.DeadlineExceeded) {
			return b.spent(s.addr)
		}
		return err
	}, nil
}
