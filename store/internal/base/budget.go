package base

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
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

// WaitBudget is what is left of a request's budget. Calls made at the
// same time are each charged their own time: the budget errs short.
type WaitBudget struct {
	mu    sync.Mutex
	total time.Duration
	left  time.Duration
}

// WithBudget is ctx whose store calls together wait at most d. A budget
// already in ctx is kept (the first one set bounds the request); d <= 0
// sets none.
func WithBudget(ctx context.Context, d time.Duration) context.Context {
	if d <= 0 || BudgetOf(ctx) != nil {
		return ctx
	}
	return context.WithValue(ctx, budgetKey{}, &WaitBudget{total: d, left: d})
}

// BudgetLeft is what is left of ctx's budget, and false when it has none.
func BudgetLeft(ctx context.Context) (time.Duration, bool) {
	b := BudgetOf(ctx)
	if b == nil {
		return 0, false
	}
	return b.Remaining(), true
}

func BudgetOf(ctx context.Context) *WaitBudget {
	b, _ := ctx.Value(budgetKey{}).(*WaitBudget)
	return b
}

func (b *WaitBudget) Remaining() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.left
}

func (b *WaitBudget) Charge(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.left -= d
}

// spent is the error of a call made with no budget left.
func (b *WaitBudget) Spent(addr string) error {
	return &UnreachableError{Addr: addr, TimedOut: true, Err: context.DeadlineExceeded,
		Why: "did not answer within the request's budget of " + b.total.Round(100*time.Millisecond).String()}
}

// Bounded is ctx with a deadline at what is left of its budget, for the
// part of a call database/sql does before the driver sees it (a wait for
// a connection from a full pool, or for one its opener dials); done maps
// that wait's timeout to an UnreachableError, charges the request what of
// the call's time the driver's calls did not (that wait), and must be
// called when the call is over (its rows closed). Without a budget (or on
// SQLite) ctx is returned as is.
func (s *DB) Bounded(ctx context.Context) (context.Context, func(error) error, error) {
	b := BudgetOf(ctx)
	if b == nil || !s.Postgres {
		return ctx, func(err error) error { return err }, nil
	}
	left := b.Remaining()
	if left <= 0 {
		return ctx, nil, b.Spent(s.Addr)
	}
	charged := new(atomic.Int64)
	bctx, cancel := context.WithTimeout(context.WithValue(ctx, callChargeKey{}, charged), left)
	start := time.Now()
	return bctx, func(err error) error {
		over := bctx.Err() != nil && ctx.Err() == nil
		cancel()
		// Waiting in the pool is waiting on the store: a request whose
		// calls each waited there nearly their budget took many times it
		// (a burst of requests against a stalled store queued for minutes).
		if waited := time.Since(start) - time.Duration(charged.Load()); waited > 0 {
			b.Charge(waited)
		}
		var u *UnreachableError
		if over && err != nil && !errors.As(err, &u) && errors.Is(err, context.DeadlineExceeded) {
			return b.Spent(s.Addr)
		}
		return err
	}, nil
}

// callChargeKey holds, in a call's context under bounded, what the
// driver's calls charged of it (guard), so that bounded charges the rest.
type callChargeKey struct{}

// ChargedCall adds d to the charge of the call under bounded in ctx.
func ChargedCall(ctx context.Context, d time.Duration) {
	if c, ok := ctx.Value(callChargeKey{}).(*atomic.Int64); ok {
		c.Add(int64(d))
	}
}

// BoundedRead is read under Bounded: a read that closes its rows before
// it returns.
func BoundedRead[T any](ctx context.Context, s *DB, read func(context.Context) (T, error)) (T, error) {
	ctx, done, err := s.Bounded(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	out, err := read(ctx)
	return out, done(err)
}

// Lock is a mutex held across store calls (a read cache's refresh). Its
// waiters wait on the store as much as its holder does: LockWithin bounds
// the wait by the request's budget and charges it, so that a burst of
// requests against a stalled store does not make each wait out the
// budgets of all those before it. The zero Lock is unlocked.
type Lock struct {
	once sync.Once
	ch   chan struct{}
}

func (l *Lock) init() { l.once.Do(func() { l.ch = make(chan struct{}, 1) }) }

// Lock takes l however long that takes: for callers without a request.
func (l *Lock) Lock() {
	l.init()
	l.ch <- struct{}{}
}

// Unlock releases l.
func (l *Lock) Unlock() { <-l.ch }

// LockWithin takes l within what is left of ctx's budget (WithBudget),
// charging the wait to it; when the budget runs out first it fails with
// the budget's UnreachableError. Without a budget, or on SQLite (bounded
// by its busy_timeout), it waits until l is free or ctx ends.
func (s *DB) LockWithin(ctx context.Context, l *Lock) error {
	l.init()
	select {
	case l.ch <- struct{}{}:
		return nil
	default:
	}
	b := BudgetOf(ctx)
	var expired <-chan time.Time
	start := time.Now()
	if b != nil && s.Postgres {
		left := b.Remaining()
		if left <= 0 {
			return b.Spent(s.Addr)
		}
		t := time.NewTimer(left)
		defer t.Stop()
		expired = t.C
		defer func() { b.Charge(time.Since(start)) }()
	}
	select {
	case l.ch <- struct{}{}:
		return nil
	case <-expired:
		return b.Spent(s.Addr)
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
