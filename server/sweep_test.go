package server

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiv1 "github.com/xfsq/xfsq/api/v1"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/internal/testsupport/treetest"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

const sweepRoute = "POST /v1/workspace/storage/projects/{id}/sweep"

// testMux serves the handlers under test as the server will, with the auth
// middleware's part played by a fixed operator: the Caller and its actor
// in the context.
func testMux(t testing.TB, root *sandbox.Root, caller Caller) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	api := answered(slog.New(slog.NewTextHandler(io.Discard, nil)), newSweepAPI(root).Sweep)
	mux.HandleFunc(sweepRoute, func(w http.ResponseWriter, r *http.Request) {
		ctx := sandbox.WithActor(withCaller(r.Context(), caller), caller.Name)
		api(w, r.WithContext(ctx))
	})
	srv := httptest.NewServer(contractCheckedUnlessBench(t, mux))
	t.Cleanup(srv.Close)
	return srv
}

// post sends body to project's sweep endpoint and decodes the answer into
// out (a problem when the status is not 200).
func post(t testing.TB, srv *httptest.Server, project, body string, out any) int {
	t.Helper()
	resp, err := http.Post(srv.URL+"/v1/workspace/storage/projects/"+project+"/sweep", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	want := "application/json"
	if resp.StatusCode != http.StatusOK {
		want = ProblemType
	}
	if ct := resp.Header.Get("Content-Type"); ct != want {
		t.Errorf("status %d with Content-Type %q, want %q: %s", resp.StatusCode, ct, want, data)
	}
	if out != nil {
		dec := json.NewDecoder(bytes.NewReader(data))
		if resp.StatusCode == http.StatusOK {
			dec.DisallowUnknownFields() // the answer is exactly the documented shape
		}
		if err := dec.Decode(out); err != nil {
			t.Fatalf("status %d: %v: %s", resp.StatusCode, err, data)
		}
	}
	return resp.StatusCode
}

func planned(p apiv1.SweepPlan, path string) bool {
	for _, e := range p.Entries {
		if e.Path == path {
			return true
		}
	}
	return false
}

func deleted(r apiv1.SweepResult, path string) (apiv1.Deleted, bool) {
	for _, d := range r.Deleted {
		if d.Path == path {
			return d, true
		}
	}
	return apiv1.Deleted{}, false
}

// A dry run over HTTP makes a plan, deletes nothing and names the plan;
// applying that id deletes exactly what it names, journalled before and
// after under the token's name, and says what it freed; the plan runs once.
func TestSweepAPIPlanThenApply(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		root := r.SweepTree()
		srv := testMux(t, r.Root, operator)
		var plan apiv1.SweepPlan
		if code := post(t, srv, "omni", `{"dry_run": true, "areas": ["cache", "workspace"]}`, &plan); code != 200 {
			t.Fatalf("dry run: %d %+v", code, plan)
		}
		if !planIDPattern().MatchString(plan.PlanID) || plan.Project != "omni" || !plan.DryRun ||
			fmt.Sprint(plan.Areas) != "[cache workspace]" || plan.ExpiresAt.Sub(plan.MadeAt) != time.Hour {
			t.Errorf("plan: %+v", plan)
		}
		if !planned(plan, "cache/omni/old") || !planned(plan, "projects/omni/build.log") || planned(plan, "cache/beta/old") ||
			planned(plan, "projects/omni/uploads/precious.log") || plan.PlannedBytes < 8192 {
			t.Errorf("plan entries: %+v", plan.Entries)
		}
		if !treetest.Exists(filepath.Join(root, "cache/omni/old")) || !treetest.Exists(filepath.Join(root, "projects/omni/build.log")) {
			t.Fatal("the dry run deleted")
		}
		if ev := r.Events("storage.evicted"); len(ev) != 0 {
			t.Fatalf("a dry run journalled deletions: %+v", ev)
		}

		var res apiv1.SweepResult
		if code := post(t, srv, "omni", `{"plan_id": "`+plan.PlanID+`"}`, &res); code != 200 {
			t.Fatalf("apply: %d %+v", code, res)
		}
		d, ok := deleted(res, "cache/omni/old")
		if !ok || d.FreedBytes < 8192 || d.RemovedFiles != 2 || res.PlanID != plan.PlanID || res.DryRun || res.FreedBytes < 8192 {
			t.Errorf("result: %+v", res)
		}
		if _, ok := deleted(res, "projects/omni/build.log"); !ok {
			t.Errorf("the planned trash was not deleted: %+v", res)
		}
		for _, p := range []string{"cache/omni/old", "projects/omni/build.log"} {
			if treetest.Exists(filepath.Join(root, p)) {
				t.Errorf("%s is still there", p)
			}
		}
		for _, p := range []string{"cache/beta/old", "projects/omni/uploads/precious.log"} {
			if !treetest.Exists(filepath.Join(root, p)) {
				t.Errorf("%s, not in the plan, was deleted", p)
			}
		}
		states := map[string][]string{}
		for _, ev := range r.Events("storage.evicted") {
			var rec struct{ Path, State string }
			json.Unmarshal(ev.Payload, &rec)
			states[rec.Path] = append(states[rec.Path], rec.State)
			if ev.Actor != operator.Name {
				t.Errorf("evicted %s journalled as %q, want the token's name", rec.Path, ev.Actor)
			}
		}
		if fmt.Sprint(states["cache/omni/old"]) != "[done pending]" {
			t.Errorf("journal of cache/omni/old (newest first): %v", states["cache/omni/old"])
		}
		swept := r.Events("storage.swept")
		if len(swept) != 1 || !strings.Contains(string(swept[0].Payload), `"plan_id":"`+plan.PlanID+`"`) || swept[0].Actor != operator.Name {
			t.Errorf("storage.swept: %+v", swept)
		}

		var p Problem
		if code := post(t, srv, "omni", `{"plan_id": "`+plan.PlanID+`"}`, &p); code != 422 ||
			p.Type != errkind.Unprocessable.TypeURI() || !strings.Contains(p.Detail, "already applied") || p.Fix == "" {
			t.Errorf("second apply: %d %+v", code, p)
		}
	})
}

// The answer follows docs/design/README.md#output-conventions: sizes *_bytes, times *_at, durations
// *_seconds, never a bare "bytes" or nanoseconds.
func TestSweepAPIFieldNames(t *testing.T) {
	r := fixture.New(t, "sqlite", filepath.Join(t.TempDir(), "xfsq.db"))
	r.SweepTree()
	srv := testMux(t, r.Root, operator)
	var plan, res map[string]any
	post(t, srv, "omni", `{"dry_run": true}`, &plan)
	post(t, srv, "omni", `{"plan_id": "`+plan["plan_id"].(string)+`"}`, &res)
	var keys func(v any, path string)
	keys = func(v any, path string) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if k == "bytes" || strings.HasSuffix(k, "_ns") || strings.HasSuffix(k, "duration") || k == "newest" {
					t.Errorf("%s.%s does not follow the output conventions", path, k)
				}
				keys(x, path+"."+k)
			}
		case []any:
			for _, x := range v {
				keys(x, path+"[]")
			}
		}
	}
	keys(plan, "plan")
	keys(res, "result")
	if _, ok := res["duration_seconds"].(float64); !ok {
		t.Errorf("result has no duration_seconds: %v", res)
	}
	if _, ok := plan["expires_at"].(string); !ok {
		t.Errorf("plan has no expires_at: %v", plan)
	}
}

// sqlOf opens the fixture's store database directly, to age a plan as
// only time would.
func sqlOf(t *testing.T, r *fixture.Root) *sql.DB {
	t.Helper()
	db, err := sql.Open(r.Driver, r.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// A plan is refused as a whole, deleting nothing, when it is for another
// root, another project, stale, made under other settings, or unknown
// (422, the unprocessable problem type: the same request can never pass,
// the fix is a new plan); a request that is not one is bad input (400).
func TestSweepAPIRefuses(t *testing.T) {
	type setup struct {
		r    *fixture.Root
		srv  *httptest.Server
		plan string // a fresh dry run's plan id for omni
	}
	cases := []struct {
		name   string
		change func(t *testing.T, s *setup) (server *httptest.Server, project, body string)
		status int
		detail string
	}{
		{"another root sharing the store", func(t *testing.T, s *setup) (*httptest.Server, string, string) {
			// A second root on the same store, under the same host name: only
			// by taking the name over (the first root gone for good).
			other, err := sandbox.OpenRoot(s.r.Ctx, sandbox.Config{Root: t.TempDir(), DSN: s.r.DSN, Host: fixture.Host,
				ProjectFiles: []string{}, Init: true, TakeOverHost: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { other.Close() })
			treetest.Aged(t, other.Manager.Root, "cache/omni/old/blob", 8192, 30)
			return testMux(t, other, operator), "omni", `{"plan_id": "` + s.plan + `"}`
		}, 422, "was made for root"},
		{"another store", func(t *testing.T, s *setup) (*httptest.Server, string, string) {
			other := fixture.New(t, s.r.Driver, storeDSN(t, s.r.Driver))
			other.Add(1<<30, "omni")
			treetest.Aged(t, other.Manager.Root, "cache/omni/old/blob", 8192, 30)
			return testMux(t, other.Root, operator), "omni", `{"plan_id": "` + s.plan + `"}`
		}, 422, "this store never made plan"},
		{"another project", func(t *testing.T, s *setup) (*httptest.Server, string, string) {
			return s.srv, "beta", `{"plan_id": "` + s.plan + `"}`
		}, 422, `not for project "beta" alone`},
		{"older than plan_max_age", func(t *testing.T, s *setup) (*httptest.Server, string, string) {
			if _, err := sqlOf(t, s.r).Exec(`UPDATE sweep_plans SET created_at = created_at - 7200000000`); err != nil {
				t.Fatal(err)
			}
			return s.srv, "omni", `{"plan_id": "` + s.plan + `"}`
		}, 422, "older than plan_max_age (1h"},
		{"policy changed since", func(t *testing.T, s *setup) (*httptest.Server, string, string) {
			if _, _, err := s.r.Manager.SetSetting(s.r.Ctx, "cache_min_age", "2d"); err != nil {
				t.Fatal(err)
			}
			return s.srv, "omni", `{"plan_id": "` + s.plan + `"}`
		}, 422, "made under other settings"},
		{"a made-up id", func(t *testing.T, s *setup) (*httptest.Server, string, string) {
			return s.srv, "omni", `{"plan_id": "pl-0123456789abcdef"}`
		}, 422, "never made plan pl-0123456789abcdef"},
		{"not a plan id", func(t *testing.T, s *setup) (*httptest.Server, string, string) {
			return s.srv, "omni", `{"plan_id": "../etc"}`
		}, 400, "plan_id is not a plan id"},
		{"plan_id with dry_run", func(t *testing.T, s *setup) (*httptest.Server, string, string) {
			return s.srv, "omni", `{"plan_id": "` + s.plan + `", "dry_run": false}`
		}, 400, "leave dry_run out"},
		{"plan_id with areas", func(t *testing.T, s *setup) (*httptest.Server, string, string) {
			return s.srv, "omni", `{"plan_id": "` + s.plan + `", "areas": ["cache"]}`
		}, 400, "leave areas out"},
		{"an empty body", func(t *testing.T, s *setup) (*httptest.Server, string, string) {
			return s.srv, "omni", ``
		}, 400, "dry_run is missing"},
		{"an unknown field", func(t *testing.T, s *setup) (*httptest.Server, string, string) {
			return s.srv, "omni", `{"dry_run": false, "force": true}`
		}, 400, `unknown field "force"`},
		{"an unknown area", func(t *testing.T, s *setup) (*httptest.Server, string, string) {
			return s.srv, "omni", `{"dry_run": false, "areas": ["uploads"]}`
		}, 400, `unknown area "uploads"`},
		{"an unknown project", func(t *testing.T, s *setup) (*httptest.Server, string, string) {
			return s.srv, "nope", `{"dry_run": false}`
		}, 404, `project "nope" not found`},
	}
	fixture.ForEach(t, func(t *testing.T, base *fixture.Root) {
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := base
				if i > 0 { // each case on a root of its own
					r = fixture.New(t, base.Driver, storeDSN(t, base.Driver))
				}
				root := r.SweepTree()
				s := &setup{r: r, srv: testMux(t, r.Root, operator)}
				var plan apiv1.SweepPlan
				if code := post(t, s.srv, "omni", `{"dry_run": true}`, &plan); code != 200 {
					t.Fatalf("dry run: %d", code)
				}
				s.plan = plan.PlanID
				srv, name, body := c.change(t, s)
				var p Problem
				if code := post(t, srv, name, body, &p); code != c.status || !strings.Contains(p.Detail, c.detail) {
					t.Errorf("%d %+v; want %d with %q", code, p, c.status, c.detail)
				}
				for _, path := range []string{"cache/omni/old", "cache/beta/old", "projects/omni/build.log"} {
					if !treetest.Exists(filepath.Join(root, path)) {
						t.Errorf("%s was deleted by a refused request", path)
					}
				}
			})
		}
	})
}

// storeDSN is a fresh store on driver.
func storeDSN(t *testing.T, driver string) string {
	for _, d := range storetest.Drivers() {
		if d.Name == driver {
			return d.DSN(t)
		}
	}
	t.Fatalf("no driver %s", driver)
	return ""
}

// A sweep already running on the project is a 409, and a plan refused so
// is not used up: once the other sweep is done it applies.
func TestSweepAPIBusy(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		root := r.SweepTree()
		srv := testMux(t, r.Root, operator)
		var plan apiv1.SweepPlan
		post(t, srv, "omni", `{"dry_run": true}`, &plan)
		host, _ := os.Hostname()
		other := fmt.Sprintf("%d@%s", os.Getpid(), host) // a live holder: this very process
		if busy, err := sandbox.TestStore(r.Manager).LockSweep(r.Ctx, "omni", store.Claim{Holder: other, Gone: func(string, store.HolderLease) (bool, string) { return false, "" }}); err != nil || busy != "" {
			t.Fatalf("lock: %q %v", busy, err)
		}
		for _, body := range []string{`{"plan_id": "` + plan.PlanID + `"}`, `{"dry_run": false}`} {
			var p Problem
			if code := post(t, srv, "omni", body, &p); code != 409 || p.Type != errkind.Conflict.TypeURI() || !strings.Contains(p.Detail, "being swept by another operation") {
				t.Errorf("%s beside a running sweep: %d %+v", body, code, p)
			}
		}
		if !treetest.Exists(filepath.Join(root, "cache/omni/old")) {
			t.Fatal("deleted beside a running sweep")
		}
		sandbox.TestStore(r.Manager).UnlockSweep(r.Ctx, "omni", other)
		var res apiv1.SweepResult
		if code := post(t, srv, "omni", `{"plan_id": "`+plan.PlanID+`"}`, &res); code != 200 {
			t.Fatalf("the plan refused while busy does not apply after: %d", code)
		}
		if _, ok := deleted(res, "cache/omni/old"); !ok {
			t.Errorf("result: %+v", res)
		}
	})
}

// A sweep now (dry_run false) sweeps the one project by policy, only the
// areas asked for.
func TestSweepAPINow(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		root := r.SweepTree()
		srv := testMux(t, r.Root, operator)
		var res apiv1.SweepResult
		if code := post(t, srv, "omni", `{"dry_run": false, "areas": ["cache"]}`, &res); code != 200 {
			t.Fatalf("sweep: %d", code)
		}
		if _, ok := deleted(res, "cache/omni/old"); !ok || treetest.Exists(filepath.Join(root, "cache/omni/old")) {
			t.Errorf("result: %+v", res)
		}
		for _, p := range []string{"cache/beta/old", "projects/omni/build.log"} {
			if !treetest.Exists(filepath.Join(root, p)) {
				t.Errorf("%s, outside the project or the areas, was deleted", p)
			}
		}
	})
}

// The root's inbound tree is swept over the API as project _root, area
// inbound: a dry run plans what is inbound_ttl old and nothing younger nor
// any symlink, applying its plan id deletes exactly that, journalled under
// policy inbound_ttl; a project has no inbound to sweep.
func TestSweepAPIInbound(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<30, "omni")
		if _, _, err := r.Manager.SetSetting(r.Ctx, "inbound_ttl", "7d"); err != nil {
			t.Fatal(err)
		}
		root := r.Manager.Root
		treetest.Aged(t, root, "inbound/chan-old/msg", 8192, 10)
		treetest.Aged(t, root, "inbound/chan-new/msg", 8192, 3)
		outside := t.TempDir()
		treetest.Aged(t, outside, "canary", 100, 30)
		if err := os.Symlink(outside, filepath.Join(root, "inbound/outside")); err != nil {
			t.Fatal(err)
		}
		srv := testMux(t, r.Root, operator)
		var plan apiv1.SweepPlan
		if code := post(t, srv, sandbox.RootOwner, `{"dry_run": true, "areas": ["inbound"]}`, &plan); code != 200 {
			t.Fatalf("dry run: %d %+v", code, plan)
		}
		if len(plan.Entries) != 1 || plan.Entries[0].Path != "inbound/chan-old" || plan.Entries[0].Area != "inbound" ||
			plan.Entries[0].Policy != "inbound_ttl" || plan.Project != sandbox.RootOwner || fmt.Sprint(plan.Areas) != "[inbound]" {
			t.Errorf("plan of _root's inbound: %+v", plan)
		}
		var res apiv1.SweepResult
		if code := post(t, srv, sandbox.RootOwner, `{"plan_id": "`+plan.PlanID+`"}`, &res); code != 200 {
			t.Fatalf("apply: %d %+v", code, res)
		}
		if d, ok := deleted(res, "inbound/chan-old"); !ok || len(res.Deleted) != 1 || d.FreedBytes < 8192 || d.Policy != "inbound_ttl" {
			t.Errorf("result: %+v", res)
		}
		if treetest.Exists(filepath.Join(root, "inbound/chan-old")) || !treetest.Exists(filepath.Join(root, "inbound/chan-new/msg")) || !treetest.Exists(filepath.Join(root, "inbound/outside")) || !treetest.Exists(filepath.Join(outside, "canary")) {
			t.Error("after the apply: want inbound/chan-old gone, the fresh entry, the symlink and what it points at intact")
		}
		var states []string
		for _, ev := range r.Events("storage.evicted") {
			var rec struct{ Path, State, Policy, Area string }
			json.Unmarshal(ev.Payload, &rec)
			if ev.Project != sandbox.RootOwner || rec.Path != "inbound/chan-old" || rec.Policy != "inbound_ttl" || rec.Area != "inbound" {
				t.Errorf("journalled %s %+v", ev.Project, rec)
			}
			states = append(states, rec.State)
		}
		if fmt.Sprint(states) != "[done pending]" {
			t.Errorf("journal of inbound/chan-old (newest first): %v", states)
		}
		var p Problem
		for _, body := range []string{`{"dry_run": true, "areas": ["inbound"]}`, `{"dry_run": false, "areas": ["inbound"]}`} {
			if code := post(t, srv, "omni", body, &p); code != 400 || !strings.Contains(p.Detail, "inbound") {
				t.Errorf("omni %s: %d %+v, want 400: a project has no inbound tree", body, code, p)
			}
		}
		if code := post(t, srv, sandbox.RootOwner, `{"dry_run": true, "areas": ["cache"]}`, &p); code != 400 {
			t.Errorf("_root's cache: %d %+v, want 400", code, p)
		}
	})
}

// A plan made without areas lists the areas it covered: a project's
// trees, or the inbound tree for _root, never all four.
func TestSweepAPIPlanListsTheAreasItCovered(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<30, "omni")
		srv := testMux(t, r.Root, operator)
		for name, want := range map[string]string{"omni": "[cache workspace scratch]", sandbox.RootOwner: "[inbound]"} {
			var plan apiv1.SweepPlan
			if code := post(t, srv, name, `{"dry_run": true}`, &plan); code != 200 {
				t.Fatalf("dry run of %s: %d %+v", name, code, plan)
			}
			if got := fmt.Sprint(plan.Areas); got != want {
				t.Errorf("plan of %s without areas lists %s, want %s", name, got, want)
			}
		}
	})
}
