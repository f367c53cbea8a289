package store

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
// a connection from a full pool, or for one its opener dials); done maps
// that wait's timeout to an UnreachableError, charges the request what of
// the call's time the driver's calls did not (that wait), and must be
// called when the call is over (its rows closed). Without a budget (or on
// SQLite) ctx is returned as is.
func (s *Store) bounded(ctx context.Context) (context.Context, func(error) error, error) {
	b := budgetOf(ctx)
	if b == nil || !s.postgres {
		return ctx, func(err error) error { return err }, nil
	}
	left := b.remaining()
	if left <= 0 {
		return ctx, nil, b.spent(s.addr)
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
			b.charge(waited)
		}
		var u *UnreachableError
		if over && err != nil && !errors.As(err, &u) && errors.Is(err, context.DeadlineExceeded) {
			return b.spent(s.addr)
		}
		return err
	}, nil
}

// callChargeKey holds, in a call's context under bounded, what the
// driver's calls charged of it (guard), so that bounded charges the rest.
type callChargeKey struct{}

// chargedCall adds d to the charge of the call under bounded in ctx.
func chargedCall(ctx context.Context, d time.Duration) {
	if c, ok := ctx.Value(callChargeKey{}).(*atomic.Int64); ok {
		c.Add(int64(d))
	}
}

// boundedRead is read under bounded: a read that closes its rows before
// it returns.
func boundedRead[T any](ctx context.Context, s *Store, read func(context.Context) (T, error)) (T, error) {
	ctx, done, err := s.bounded(ctx)
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
func (s *Store) LockWithin(ctx context.Context, l *Lock) error {
	l.init()
	select {
	case l.ch <- struct{}{}:
		return nil
	default:
	}
	b := budgetOf(ctx)
	var expired <-chan time.Time
	start := time.Now()
	if b != nil && s.postgres {
		left := b.remaining()
		if left <= 0 {
			return b.spent(s.addr)
		}
		t := time.NewTimer(left)
		defer t.Stop()
		expired = t.C
		defer func() { b.charge(time.Since(start)) }()
	}
	select {
	case l.ch <- struct{}{}:
		return nil
	case <-expired:
		return b.spent(s.addr)
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
