// Package tenanttest gives tests a tenant that races xfsq: an action run
// over and over beside the operation under test. It owns only that loop;
// what the tenant does is the test's.
package tenanttest

import (
	"sync"
	"testing"
)

// Loop runs act over and over in a goroutine of its own until the returned
// stop is called, which waits for the last run to end; the test's end
// stops it too, so a failing test never leaves it running.
func Loop(t testing.TB, act func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
				act()
			}
		}
	})
	var once sync.Once
	stop = func() { once.Do(func() { close(done); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}
