package server

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/settings"
)

// storeBudget is the api_store_budget setting as the guard gives it to
// each request (sandbox.WithStoreBudget): one budget for all the
// request's store calls, so that a blackholed store costs a request its
// budget, not a bound per call. It is read again at most every
// storeBudgetTTL, beside a request, never on its path: reading it waits
// on the store too.
type storeBudget struct {
	m     *sandbox.Manager
	fixed time.Duration // Config.StoreBudget: never read
	value atomic.Int64  // the budget in force, in nanoseconds
	read  atomic.Int64  // when it was last asked for, Unix nanoseconds
}

const storeBudgetTTL = 10 * time.Second

func newStoreBudget(m *sandbox.Manager, fixed time.Duration) *storeBudget {
	b := &storeBudget{m: m, fixed: fixed}
	def, _ := settings.Lookup("api_store_budget")
	b.value.Store(int64(settings.Value{Setting: def, Value: def.Default}.Duration()))
	if fixed <= 0 {
		b.read.Store(time.Now().UnixNano())
		b.refresh()
	}
	return b
}

// get is the budget in force, starting a read of the setting when the
// last is older than storeBudgetTTL.
func (b *storeBudget) get() time.Duration {
	if b.fixed > 0 {
		return b.fixed
	}
	now, last := time.Now().UnixNano(), b.read.Load()
	if now-last > int64(storeBudgetTTL) && b.read.CompareAndSwap(last, now) {
		go b.refresh()
	}
	return time.Duration(b.value.Load())
}

// refresh reads the setting within the budget in force; on an error the
// budget stays as it was.
func (b *storeBudget) refresh() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(b.value.Load()))
	defer cancel()
	if v, err := b.m.Setting(ctx, "api_store_budget"); err == nil && v.Duration() > 0 {
		b.value.Store(int64(v.Duration()))
	}
}
