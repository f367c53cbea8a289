package server_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
)

// TestConcurrentRequestsKeepTheirStoreBudget: while the store is
// blackholed, requests anyone may send (a reader's, a limited reader's,
// /metrics without a token) sent many at once each answer within their
// own budget (api_store_budget) and a bound for the server's own work:
// none waits for another's store calls on top of its own (a lock held
// across a store call), so a burst of them cannot make a scrape or a
// dashboard's request wait past its budget. And once the link is back
// every one of them answers again.
func TestConcurrentRequestsKeepTheirStoreBudget(t *testing.T) {
	const p = "/v1/workspace/storage/projects"
	const budget = 800 * time.Millisecond
	proxy := storetest.NewProxy(t, storetest.Postgres(t))
	r := fixture.New(t, "postgres", proxy.DSN)
	r.Add(10<<20, "omni", "other")
	if _, _, err := r.Manager.SetSetting(r.Ctx, "api_store_budget", budget.String()); err != nil {
		t.Fatal(err)
	}
	ts := newServer(t, r)
	reqs := []struct{ path, token string }{
		{"/metrics", ""},
		{"/v1/workspace/storage", readerToken},
		{"/v1/workspace/storage", limitedToken},
		{p + "/other", limitedToken},
		{p + "/other/history", limitedToken},
		{"/v1/workspace/storage/history", readerToken},
		{"/v1/workspace/storage/report", readerToken},
		{"/v1/workspace/storage/events", limitedToken},
		{p + "/other/files/", limitedToken},
		{p + "/other/admission", limitedToken},
		{"/v1/system/health", readerToken},
	}
	// Warm: every route answered once with the link up (read caches kept).
	for _, q := range reqs {
		if code, _, body := ts.raw(t, "GET", q.path, q.token, ""); code != 200 {
			t.Fatalf("GET %s: %d %s", q.path, code, shorten(body))
		}
	}
	proxy.Blackhole()
	const each = 6
	var mu sync.Mutex
	worst := map[string]time.Duration{}
	var wg sync.WaitGroup
	for _, q := range reqs {
		for range each {
			wg.Go(func() {
				start := time.Now()
				code, _, body := ts.raw(t, "GET", q.path, q.token, "")
				took := time.Since(start)
				if code >= 500 && code != 503 {
					t.Errorf("GET %s while the store is blackholed: %d %s", q.path, code, shorten(body))
				}
				mu.Lock()
				worst[q.path+" as "+q.token] = max(worst[q.path+" as "+q.token], took)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	// Each request's store calls share its budget; the health check's
	// parts have their own second. Slack for a loaded machine, far below
	// what waiting out another request's budget adds.
	limit := budget + time.Second + 1500*time.Millisecond
	for name, took := range worst {
		if took > limit {
			t.Errorf("GET %s, %d at once with the store blackholed: the slowest took %s, past its budget of %s (and the bound %s)", name, each, took.Round(time.Millisecond), budget, limit)
		}
	}
	t.Logf("slowest answers with the store blackholed: %v", fmt.Sprint(worst))
	// And the other routes that read the store, one at a time: 503 within
	// the budget.
	for _, q := range []struct{ path, token string }{
		{"/v1/settings", readerToken},
		{"/v1/settings/api_store_budget", readerToken},
		{p + "/other/diff", readerToken},
		{"/v1/fleet/hosts", readerToken},
		{"/v1/fleet/storage", readerToken},
		{"/v1/system/doctor", operatorToken},
	} {
		start := time.Now()
		code, _, body := ts.raw(t, "GET", q.path, q.token, "")
		if took := time.Since(start); code != 503 || took > limit {
			t.Errorf("GET %s with the store blackholed: %d in %s, want 503 within %s: %s", q.path, code, took.Round(time.Millisecond), limit, shorten(body))
		}
	}
	proxy.Restore(t)
	deadline := time.Now().Add(10 * time.Second)
	for _, q := range reqs {
		for {
			code, _, body := ts.raw(t, "GET", q.path, q.token, "")
			if code == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET %s 10 s after the link came back: %d %s", q.path, code, shorten(body))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
