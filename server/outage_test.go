package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
)

// TestStoreOutage: while the PostgreSQL store refuses or is blackholed,
// /readyz is 503 and says which (refused, or silent past its budget); the
// API answers 503 "store unreachable", not 500, within its budget (the
// api_store_budget setting, for all of a request's store calls together:
// the store's own bounds, left at their defaults, are seconds a call); a
// write on the fallback is refused with nothing written; and when the
// link returns the server serves again by itself.
func TestStoreOutage(t *testing.T) {
	const p = "/v1/workspace/storage/projects"
	const budget = 1200 * time.Millisecond
	proxy := storetest.NewProxy(t, storetest.Postgres(t))
	r := fixture.New(t, "postgres", proxy.DSN)
	r.Add(10<<20, "omni")
	if _, _, err := r.Manager.SetSetting(r.Ctx, "api_store_budget", budget.String()); err != nil {
		t.Fatal(err)
	}
	ts := newServer(t, r)
	if code, _, body := ts.raw(t, "GET", "/readyz", "", ""); code != 200 { // and the answers' checker is loaded
		t.Fatalf("readyz: %d %s", code, body)
	}
	written := filepath.Join(r.Manager.Root, "projects/omni/new.txt")
	for _, outage := range []struct {
		name, ready string
		cut         func()
	}{
		{"refused", "refused the connection", proxy.Refuse},
		{"blackholed", "did not answer within", proxy.Blackhole},
	} {
		outage.cut()
		// The readiness budget (2 s, within the request's), else the
		// request's budget: a PUT makes several store calls.
		for _, c := range []struct {
			method, path, token, body, want string
			budget                          time.Duration
		}{
			{"GET", "/readyz", "", "", "store: unreachable: " + outage.ready, budget},
			{"GET", p + "/omni", operatorToken, "", "store unreachable", budget},
			{"PUT", p + "/omni/files/new.txt", operatorToken, "hello", "store unreachable", budget},
		} {
			start := time.Now()
			code, _, body := ts.raw(t, c.method, c.path, c.token, c.body)
			took := time.Since(start)
			if code != 503 || !strings.Contains(body, c.want) || !strings.Contains(body, errkind.NotReady.TypeURI()) {
				t.Errorf("%s: %s %s: %d %s, want 503 saying %q", outage.name, c.method, c.path, code, body, c.want)
			}
			if took > c.budget+500*time.Millisecond {
				t.Errorf("%s: %s %s took %s, budget %s", outage.name, c.method, c.path, took, c.budget)
			}
		}
		if _, err := os.Lstat(written); !os.IsNotExist(err) {
			t.Errorf("%s: a write while the store was unreachable left %s (%v)", outage.name, written, err)
		}
		proxy.Restore(t)
		deadline := time.Now().Add(10 * time.Second)
		for {
			code, _, body := ts.raw(t, "GET", "/readyz", "", "")
			if code == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not ready 10 s after the link came back: %d %s", outage.name, code, body)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if code, _, body := ts.raw(t, "GET", p+"/omni", operatorToken, ""); code != 200 {
			t.Fatalf("%s: after the link came back: %d %s", outage.name, code, body)
		}
	}
}
