package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/daemon"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/client"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/health"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/metrics"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/server"
	"github.com/xfsq/xfsq/store"
)

// The tokens every test server accepts.
const (
	operatorToken = "op-3f9c2e7a1b5d4c6e8f0a"
	readerToken   = "rd-8a7b6c5d4e3f2a1b0c9d"
	limitedToken  = "lim-1122334455667788aabb" // a reader of project "other" only
)

var tokenFile = fmt.Sprintf("# test tokens\n%s,ops,operator\nsha256:%x,dash,reader\n%s,limited,reader,\"other\"\n",
	operatorToken, sha256.Sum256([]byte(readerToken)), limitedToken)

// syncBuffer is a log sink the handlers' goroutines share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type testServer struct {
	*httptest.Server
	s   *server.Server
	r   *fixture.Root
	log *syncBuffer
}

func newServer(t *testing.T, r *fixture.Root, extra ...server.Route) *testServer {
	t.Helper()
	return newServerWith(t, r, serverOptions{routes: extra})
}

// serverOptions change newServer's server: more routes, the Config, and
// the connections it accepts.
type serverOptions struct {
	routes    []server.Route
	configure func(*server.Config)
	listener  func(net.Listener) net.Listener
}

func newServerWith(t *testing.T, r *fixture.Root, o serverOptions) *testServer {
	t.Helper()
	set, err := daemon.ParseTokens(strings.NewReader(tokenFile), "test")
	if err != nil {
		t.Fatal(err)
	}
	// The store and quota parts as serve has them (no Docker daemon here).
	ch, err := health.New(health.Options{Root: r.Manager.Root, Budget: time.Second, CPUSampleInterval: -1,
		Store: sandbox.TestStore(r.Manager).Ping,
		Quota: func(context.Context) (health.QuotaState, error) {
			return health.QuotaState{Kind: "fallback", Reason: "the test root is not XFS"}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	// The access log as serve writes it (by hand, beside slog's lines).
	cfg := server.Config{Root: r.Root, Tokens: set, Log: slog.New(slog.NewJSONHandler(log, nil)), AccessLog: log, Health: ch,
		Metrics: metrics.Handler(r.Root, ch, nil), Routes: o.routes}
	if o.configure != nil {
		o.configure(&cfg)
	}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Every answer of every test is checked against openapi.json.
	hs := httptest.NewUnstartedServer(server.ContractChecked(t, s.Handler()))
	if o.listener != nil {
		hs.Listener = o.listener(hs.Listener)
	}
	hs.Start()
	t.Cleanup(hs.Close)
	return &testServer{Server: hs, s: s, r: r, log: log}
}

func (ts *testServer) client(token string) *client.Client {
	return client.New(ts.URL, token, ts.Client())
}

// raw sends a request and returns status and body.
func (ts *testServer) raw(t *testing.T, method, path, token, body string) (int, http.Header, string) {
	t.Helper()
	return ts.rawHost(t, method, path, token, body, "")
}

// rawHost is raw with a Host header of its own ("": the server's address).
func (ts *testServer) rawHost(t *testing.T, method, path, token, body, host string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	req.Host = host
	if strings.HasPrefix(body, "{") {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// matrixRow is how the auth matrix exercises one route: the concrete
// request, and the status it gets from a caller allowed to make it.
type matrixRow struct {
	path, body string
	ok         int
}

// TestAuthMatrix runs every route of the route table × {no token, bad
// token, reader, reader limited to another project, operator}. It walks
// the table itself, so a route added without a row here fails.
func TestAuthMatrix(t *testing.T) {
	const p = "/v1/workspace/storage/projects"
	rows := map[string]matrixRow{
		"GET /healthz":                          {"/healthz", "", 200},
		"GET /readyz":                           {"/readyz", "", 200},
		"GET /metrics":                          {"/metrics", "", 200},
		"GET /v1/openapi.json":                  {"/v1/openapi.json", "", 200},
		"GET /{$}":                              {"/", "", 200},
		"GET /ui/{file}":                        {"/ui/app.js", "", 200},
		"GET /v1/system/health":                 {"/v1/system/health", "", 200},
		"GET " + p:                              {p, "", 200},
		"POST " + p:                             {p, `{"project": "fresh"}`, 201},
		"PATCH " + p + "/{id}":                  {p + "/omni", `{"bytes_hard": "20m"}`, 200},
		"DELETE " + p + "/{id}":                 {p + "/victim", "", 200},
		"GET " + p + "/{id}/admission":          {p + "/omni/admission", "", 200},
		"GET " + p + "/{id}/leases":             {p + "/omni/leases", "", 200},
		"POST " + p + "/{id}/leases/{run}":      {p + "/omni/leases/run-1", `{"ttl": "1h"}`, 200},
		"DELETE " + p + "/{id}/leases/{run}":    {p + "/omni/leases/run-1", "", 204},
		"GET /v1/workspace/storage/events":      {"/v1/workspace/storage/events", "", 200},
		"GET /v1/workspace/storage":             {"/v1/workspace/storage", "", 200},
		"GET /v1/workspace/storage/summary":     {"/v1/workspace/storage/summary", "", 200},
		"GET " + p + "/{id}":                    {p + "/omni", "", 200},
		"GET " + p + "/{id}/diff":               {p + "/omni/diff", "", 404}, // no snapshot kept to compare: past the role check
		"GET " + p + "/{id}/history":            {p + "/omni/history", "", 200},
		"GET /v1/workspace/storage/history":     {"/v1/workspace/storage/history", "", 200},
		"GET " + p + "/{id}/files/{$}":          {p + "/omni/files/", "", 200},
		"GET " + p + "/{id}/files/{path...}":    {p + "/omni/files/uploads%2Fa.txt", "", 200},
		"PUT " + p + "/{id}/files/{path...}":    {p + "/omni/files/uploads/a.txt", "hello", 201},
		"POST " + p + "/{id}/files/{path...}":   {p + "/omni/files/uploads/b.txt", "hello", 201},
		"DELETE " + p + "/{id}/files/{path...}": {p + "/omni/files/uploads/a.txt", "", 200},
		"POST " + p + "/{id}/sweep":             {p + "/omni/sweep", `{"dry_run": true}`, 200},
		"GET /v1/fleet/hosts":                   {"/v1/fleet/hosts", "", 200},
		"GET /v1/fleet/storage":                 {"/v1/fleet/storage", "", 200},
		"POST /v1/fleet/hosts/{host}/retire":    {"/v1/fleet/hosts/gone-host/retire", "", 200},
		"GET /v1/workspace/storage/report":      {"/v1/workspace/storage/report?over=90&sort=percent", "", 200},
		"GET /v1/settings":                      {"/v1/settings", "", 200},
		"GET /v1/settings/{key}":                {"/v1/settings/scratch_ttl", "", 200},
		"PUT /v1/settings/{key}":                {"/v1/settings/scratch_ttl", `{"value": "2d"}`, 200},
		"DELETE /v1/settings/{key}":             {"/v1/settings/scratch_ttl", "", 200},
		"GET /v1/system/doctor":                 {"/v1/system/doctor", "", 200},
		"POST /v1/system/doctor/fix":            {"/v1/system/doctor/fix", "", 200},
	}
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(10<<20, "omni", "other", "victim")
		r.OtherHost("gone-host") // never beat: stale, so an operator may retire it
		ts := newServer(t, r)
		for _, rt := range ts.s.Routes() {
			key := rt.Method + " " + rt.Pattern
			row, ok := rows[key]
			if !ok {
				t.Errorf("route %s has no row in the auth matrix: add one", key)
				continue
			}
			want := map[string]int{"none": row.ok, "bad": row.ok, "reader": row.ok, "limited": row.ok, "operator": row.ok}
			if rt.Role != server.RoleNone {
				want["none"], want["bad"] = 401, 401
			}
			if rt.Role == server.RoleOperator {
				want["reader"], want["limited"] = 403, 403
			} else if rt.ProjectScoped() {
				want["limited"] = 404
			} else if strings.HasPrefix(rt.Pattern, "/v1/fleet/") {
				want["limited"] = 403 // the fleet is across hosts: not a limited reader's
			}
			// A page that rebinds its name to the server (DNS rebinding)
			// sends that name as Host: refused before anything runs, whoever
			// asks (the operator's request below still finds its state).
			for _, token := range []string{"", readerToken, operatorToken} {
				status, h, body := ts.rawHost(t, rt.Method, row.path, token, row.body, "rebind.attacker.example:9742")
				if status != http.StatusMisdirectedRequest || h.Get("X-Request-Id") == "" || !strings.Contains(body, server.TypeMisdirected) {
					t.Errorf("%s with a foreign Host: %d (request id %q) %s, want 421", key, status, h.Get("X-Request-Id"), body)
				}
			}
			// The operator last: its request is the one that changes state.
			for _, who := range []string{"none", "bad", "reader", "limited", "operator"} {
				token := map[string]string{"none": "", "bad": "not-a-token-at-all-000", "reader": readerToken, "limited": limitedToken, "operator": operatorToken}[who]
				status, h, body := ts.raw(t, rt.Method, row.path, token, row.body)
				if status != want[who] {
					t.Errorf("%s as %s: %d, want %d: %s", key, who, status, want[who], body)
				}
				if status >= 400 && h.Get("Content-Type") != server.ProblemType {
					t.Errorf("%s as %s: %d with Content-Type %q, want a problem", key, who, status, h.Get("Content-Type"))
				}
				switch status {
				case 401:
					if h.Get("WWW-Authenticate") == "" || !strings.Contains(body, server.TypeUnauthorized) {
						t.Errorf("%s as %s: 401 without WWW-Authenticate or its type: %v %s", key, who, h, body)
					}
				case 403:
					if !strings.Contains(body, server.TypeForbidden) {
						t.Errorf("%s as %s: 403 without its type: %s", key, who, body)
					}
				}
			}
		}
		// Outside the table: 404 for an unknown path, 405 with Allow for a
		// known one asked with another method, both as problems.
		if code, h, body := ts.raw(t, "GET", "/v1/nothing", readerToken, ""); code != 404 || h.Get("Content-Type") != server.ProblemType {
			t.Errorf("unknown path: %d %s", code, body)
		}
		if code, h, body := ts.raw(t, "PUT", p+"/omni/admission", readerToken, ""); code != 405 || h.Get("Allow") != "GET, HEAD" || h.Get("Content-Type") != server.ProblemType {
			t.Errorf("wrong method: %d %v %s", code, h, body)
		}
		if code, h, body := ts.rawHost(t, "GET", "/v1/nothing", readerToken, "", "rebind.attacker.example"); code != 421 || h.Get("X-Request-Id") == "" {
			t.Errorf("unknown path with a foreign Host: %d %s", code, body)
		}
		// A limited reader's 404 is the library's own answer for a project
		// that does not exist, word for word.
		_, _, hidden := ts.raw(t, "GET", p+"/omni/admission", limitedToken, "")
		_, _, missing := ts.raw(t, "GET", p+"/nosuch/admission", readerToken, "")
		if strings.ReplaceAll(hidden, "omni", "X") != strings.ReplaceAll(missing, "nosuch", "X") {
			t.Errorf("a hidden project's 404 differs from a missing one's:\n%s\n%s", hidden, missing)
		}
	})
}

// TestAPI drives the endpoints through the client, on each driver.
func TestAPI(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		ts := newServer(t, r)
		ctx := context.Background()
		op, rd, lim := ts.client(operatorToken), ts.client(readerToken), ts.client(limitedToken)
		hard, isoft, ihard := uint64(1<<20), uint64(1000), uint64(2000)
		p, err := op.AddProject(ctx, "omni", client.AreaLimits{Workspace: client.Limits{}.WithBytesHard(hard).WithInodesSoft(isoft).WithInodesHard(ihard), Cache: client.Limits{}.WithBytesSoft(hard), Scratch: client.Limits{}.WithBytesHard(2 * hard)})
		if err != nil || p.Project != "omni" || len(p.Trees) != len(area.OfProject) {
			t.Fatalf("add: %v %+v", err, p)
		}
		for _, tr := range p.Trees {
			if tr.Area == area.Scratch && tr.BytesHard != 2*hard {
				t.Errorf("scratch added with %d bytes hard, want the %d asked for", tr.BytesHard, 2*hard)
			}
		}
		if _, err := op.AddProject(ctx, "omni", client.AreaLimits{}); status(err) != 409 {
			t.Errorf("add twice: %v, want 409", err)
		}
		if _, err := op.AddProject(ctx, "Bad Name", client.AreaLimits{}); status(err) != 400 {
			t.Errorf("add a bad name: %v, want 400", err)
		}
		if code, _, body := ts.raw(t, "POST", "/v1/workspace/storage/projects", operatorToken, `{"project": "x", "workspace": {"bytes_hard": "ten"}}`); code != 400 || !strings.Contains(body, "bytes_hard") {
			t.Errorf("a bad size: %d %s, want 400 naming the field", code, body)
		}
		if code, _, body := ts.raw(t, "POST", "/v1/workspace/storage/projects", operatorToken, `{"project": "x", "colour": 1}`); code != 400 || !strings.Contains(body, "colour") {
			t.Errorf("an unknown field: %d %s, want 400 naming it", code, body)
		}
		if _, err := op.AddProject(ctx, "other", client.AreaLimits{}); err != nil {
			t.Fatal(err)
		}
		// The list, as project list: a limited reader sees its projects only.
		for who, want := range map[*client.Client]string{rd: "[omni other]", lim: "[other]"} {
			ps, err := who.ListProjects(ctx)
			var names []string
			for _, p := range ps {
				names = append(names, p.Project)
				if p.State != "ready" || p.CreatedAt.IsZero() {
					t.Errorf("listed %+v, want a ready project with its creation time", p)
				}
			}
			if sort.Strings(names); err != nil || fmt.Sprint(names) != want {
				t.Errorf("project list: %v %v, want %s", err, names, want)
			}
		}
		soft := uint64(512 << 10)
		p, err = op.SetLimits(ctx, "omni", "", client.Limits{}.WithBytesSoft(soft))
		if ws := workspaceOf(p); err != nil || ws.BytesSoft != soft {
			t.Errorf("set: %v %+v", err, p)
		}
		a, err := rd.Admission(ctx, "omni", false)
		if err != nil || a.Decision != sandbox.Ok {
			t.Errorf("admission: %v %+v", err, a)
		}
		// Over a soft limit: warn, with when its grace ends.
		one := uint64(1)
		if _, err := op.SetLimits(ctx, "omni", "cache", client.Limits{}.WithBytesSoft(one).WithInodesSoft(one)); err != nil {
			t.Fatal(err)
		}
		if _, err := op.SetLimits(ctx, "omni", "", client.Limits{}.WithInodesSoft(one)); err != nil {
			t.Fatal(err)
		}
		a, err = rd.Admission(ctx, "omni", false)
		bytesGrace, inodesGrace := false, false
		for _, tr := range a.Trees {
			bytesGrace = bytesGrace || tr.BytesGraceEndsAt != nil
			inodesGrace = inodesGrace || tr.InodesGraceEndsAt != nil
		}
		if err != nil || a.Decision != sandbox.Warn || !bytesGrace || !inodesGrace {
			t.Errorf("admission over soft limits: %v %+v, want warn with when each grace ends", err, a)
		}
		if ps, err := rd.ProjectStorage(ctx, "omni", 1); err != nil || len(ps.Trees) != len(a.Trees) {
			t.Errorf("project storage over soft limits: %v %+v", err, ps)
		}
		// A deny is an answer: 200 with decision deny, as project check says.
		zero := uint64(1)
		if _, err := op.SetLimits(ctx, "other", "", client.Limits{}.WithBytesHard(zero)); err != nil {
			t.Fatal(err)
		}
		a, err = lim.Admission(ctx, "other", false)
		want, _ := r.Manager.Check(ctx, "other")
		if err != nil || a.Decision != sandbox.Deny || a.Message != want.Message {
			t.Errorf("admission of a full project: %v %+v, want the library's %+v", err, a, want)
		}

		l, err := op.AcquireLease(ctx, "omni", "run-1", time.Hour)
		if err != nil || !l.Active {
			t.Fatalf("lease: %v %+v", err, l)
		}
		if l, err = op.AcquireLease(ctx, "omni", "run-1", time.Minute); err != nil || !l.KeptLonger {
			t.Errorf("a shorter renewal: %v %+v, want the lease kept longer", err, l)
		}
		if _, err := op.SetLimits(ctx, "omni", "cache", client.Limits{}.WithInodesSoft(isoft).WithInodesHard(ihard)); err != nil {
			t.Errorf("cache inode limits: %v", err)
		}
		if _, err := op.AcquireLease(ctx, "omni", "run-2", 8*24*time.Hour); status(err) != 400 {
			t.Errorf("a lease over 7 days: %v, want 400", err)
		}
		ls, err := rd.Leases(ctx, "omni")
		if err != nil || len(ls) != 1 || ls[0].Run != "run-1" {
			t.Errorf("leases: %v %+v", err, ls)
		}
		// Removal is refused while the lease holds, with the run named.
		_, err = op.RemoveProject(ctx, "omni", client.RemoveOptions{Purge: true})
		var pe *client.ProblemError
		if !errors.As(err, &pe) || pe.Status != 409 || pe.Type != errkind.Conflict.TypeURI() || !strings.Contains(pe.Detail, "run-1") {
			t.Errorf("remove while leased: %v, want 409 naming run-1", err)
		}
		// A dry run answers what the real call would: 409, the run named.
		_, err = op.RemoveProject(ctx, "omni", client.RemoveOptions{Purge: true, DryRun: true})
		if !errors.As(err, &pe) || pe.Status != 409 || !strings.Contains(pe.Detail, "run-1") {
			t.Errorf("dry run while leased: %v, want 409 naming run-1", err)
		}
		dry, err := op.RemoveProject(ctx, "omni", client.RemoveOptions{Purge: true, Force: true, DryRun: true})
		if err != nil || !dry.DryRun || !dry.Forced || len(dry.WouldPurge) != len(area.OfProject) || len(dry.HeldLeases) != 1 {
			t.Errorf("forced dry run: %v %+v", err, dry)
		}
		if err := op.ReleaseLease(ctx, "omni", "run-1"); err != nil {
			t.Fatal(err)
		}
		if err := op.ReleaseLease(ctx, "omni", "run-1"); status(err) != 404 {
			t.Errorf("release twice: %v, want 404", err)
		}
		res, err := op.RemoveProject(ctx, "omni", client.RemoveOptions{Purge: true})
		if err != nil || !res.Purged {
			t.Errorf("remove: %v %+v", err, res)
		}
		if _, err := rd.Admission(ctx, "omni", false); status(err) != 404 {
			t.Errorf("admission of a removed project: %v, want 404", err)
		}
		// --force removes a project a run holds, and says so.
		if _, err := op.AddProject(ctx, "held", client.AreaLimits{}); err != nil {
			t.Fatal(err)
		}
		if _, err := op.AcquireLease(ctx, "held", "run-1", time.Hour); err != nil {
			t.Fatal(err)
		}
		if res, err := op.RemoveProject(ctx, "held", client.RemoveOptions{Force: true}); err != nil || !res.Forced || len(res.EndedLeases) != 1 {
			t.Errorf("forced removal: %v %+v", err, res)
		}

		// Every change is journalled under the token's name.
		for _, typ := range []journal.Type{"project.added", "quota.changed", "project.removed"} {
			for _, ev := range r.Events(typ) {
				if ev.Actor != "ops" {
					t.Errorf("%s journalled as %q, want the token's name ops", typ, ev.Actor)
				}
			}
		}

		// The health answer is the health package's, part for part.
		h, err := rd.Health(ctx)
		if err != nil || h.Disk == nil || h.CPU == nil || h.Memory == nil {
			t.Errorf("health: %v %+v", err, h)
		}
		if err := rd.Ready(ctx); err != nil {
			t.Errorf("ready: %v", err)
		}
		anon := ts.client("")
		if err := anon.Healthz(ctx); err != nil {
			t.Errorf("healthz: %v", err)
		}
		if spec, err := anon.OpenAPI(ctx); err != nil || !bytes.Equal(spec, server.OpenAPI) {
			t.Errorf("the description through the client: %v, %d bytes", err, len(spec))
		}
	})
}

// TestEventsPaging: pages follow the cursor without gaps or repeats while
// records are appended between pages, and a limited reader sees only its
// projects' records.
func TestEventsPaging(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<20, "p0", "p1", "p2", "p3", "other")
		ts := newServer(t, r)
		ctx := context.Background()
		rd := ts.client(readerToken)
		before := r.Events("")
		var seen []int64
		cursor := ""
		for i := 0; ; i++ {
			page, err := rd.Events(ctx, client.EventQuery{Limit: 2, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range page.Events {
				seen = append(seen, ev.ID)
			}
			// A record appended meanwhile must not shift the next page.
			r.Add(1<<20, fmt.Sprintf("late%d", i))
			if page.Next == "" {
				break
			}
			cursor = page.Next
		}
		if len(seen) != len(before) {
			t.Fatalf("paged %d records, want the %d there were at the start: %v", len(seen), len(before), seen)
		}
		for i, ev := range before {
			if seen[i] != ev.ID {
				t.Fatalf("page order: %v, want %+v", seen, before)
			}
		}
		if _, err := rd.Events(ctx, client.EventQuery{Cursor: "garbage"}); status(err) != 400 {
			t.Errorf("a bad cursor: %v, want 400", err)
		}
		lim := ts.client(limitedToken)
		page, err := lim.Events(ctx, client.EventQuery{Limit: 1000})
		if err != nil || len(page.Events) == 0 {
			t.Fatalf("limited events: %v %+v", err, page)
		}
		for _, ev := range page.Events {
			if ev.Project != "other" {
				t.Errorf("a reader limited to other saw %+v", ev)
			}
		}
		if _, err := lim.Events(ctx, client.EventQuery{Project: "p0"}); status(err) != 404 {
			t.Errorf("a limited reader filtering on a hidden project: %v, want 404", err)
		}
		// since: only what was journalled from then on, the early adds not.
		cut := before[0].At
		page, err = rd.Events(ctx, client.EventQuery{Since: cut.Add(time.Microsecond).Format(time.RFC3339Nano), Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range page.Events {
			if !ev.RecordedAt.After(cut) {
				t.Errorf("since %s: got record %d (%s at %s), journalled before it", cut, ev.ID, ev.Type, ev.RecordedAt)
			}
		}
		if all, _ := rd.Events(ctx, client.EventQuery{Limit: 1000}); len(page.Events) == 0 || len(page.Events) >= len(all.Events) {
			t.Errorf("since %s kept %d of %d records: want the later ones only", cut, len(page.Events), len(all.Events))
		}
		page, err = rd.Events(ctx, client.EventQuery{Type: "project.added", Project: "p1"})
		if err != nil || len(page.Events) != 1 || page.Events[0].Project != "p1" {
			t.Errorf("filtered: %v %+v", err, page)
		}
	})
}

// TestSecretsNeverLeak makes requests with known tokens — good ones, bad
// ones, a token in the query string, bad bodies, a 500 (the store closed
// under the server) — and then looks
// for each token and its SHA-256 in the access log, every response body
// and header, every journal record and every error text.
func TestSecretsNeverLeak(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		ts := newServer(t, r)
		var seen strings.Builder
		record := func(status int, h http.Header, body string) {
			fmt.Fprintf(&seen, "%d %v %s\n", status, h, body)
		}
		const p = "/v1/workspace/storage/projects"
		for _, req := range []struct{ method, path, token, body string }{
			{"POST", p, operatorToken, `{"project": "omni"}`},
			{"POST", p, operatorToken, `{"project": "x", "workspace": {"bytes_hard": "ten"}}`},
			{"PATCH", p + "/omni", operatorToken, `{"colour": 1}`},
			{"POST", p + "/omni/leases/run-1", operatorToken, `{"ttl": "forever"}`},
			{"DELETE", p + "/omni/leases/run-9", operatorToken, ""},
			{"GET", p + "/omni/admission?token=" + readerToken, readerToken, ""},
			{"GET", "/v1/workspace/storage/events?access_token=" + operatorToken, "", ""},
			{"GET", p + "/omni/admission", operatorToken + "x", ""},
			{"GET", p + "/omni/admission", limitedToken, ""},
			{"POST", p + "/omni/leases/run-1", readerToken, `{"ttl": "1h"}`},
			{"GET", "/v1/workspace/storage/events", readerToken, ""},
		} {
			record(ts.raw(t, req.method, req.path, req.token, req.body))
		}
		_, err := ts.client(operatorToken+"x").Admission(context.Background(), "omni", false)
		fmt.Fprintln(&seen, err)
		// What a scrape shows after all that (its request failures and
		// their kinds counted), read while the store still answers.
		status, _, metricsText := ts.raw(t, "GET", "/metrics", "", "")
		if status != 200 || !strings.Contains(metricsText, "xfsq_") {
			t.Fatalf("the scrape: %d\n%s", status, metricsText)
		}
		// A real internal error: the store closed under the server.
		sandbox.TestStore(r.Manager).Close()
		record(ts.raw(t, "GET", p+"/omni/admission", readerToken, "")) // may answer from its cache
		record(ts.raw(t, "GET", "/v1/workspace/storage/events", readerToken, ""))
		evs, err := r.Reopen().Events(context.Background(), sandbox.EventQuery{Limit: sandbox.MaxEventLimit})
		if err != nil {
			t.Fatal(err)
		}
		journal, _ := json.Marshal(evs)
		if !strings.Contains(seen.String(), " 500 ") && !strings.Contains(seen.String(), "500 map") {
			t.Errorf("no 500 in the run: the secrets test must include one\n%s", seen.String())
		}
		logs := ts.log.String()
		if !strings.Contains(logs, `"token":"ops"`) || !strings.Contains(logs, `"level":"ERROR"`) {
			t.Errorf("the access log lacks the token's name or the internal error:\n%s", logs)
		}
		for _, tok := range []string{operatorToken, readerToken, limitedToken} {
			sum := sha256.Sum256([]byte(tok))
			for _, secret := range []string{tok, hex.EncodeToString(sum[:])} {
				for what, text := range map[string]string{"the access log": logs, "the journal": string(journal), "the metrics": metricsText} {
					if strings.Contains(text, secret) {
						t.Errorf("%s contains a token (or its hash)", what)
					}
				}
				if strings.Contains(seen.String(), secret) {
					t.Errorf("a response contains the token %s… (or its hash):\n%s", tok[:4], seen.String())
				}
			}
		}
	})
}

func status(err error) int {
	var pe *client.ProblemError
	if errors.As(err, &pe) {
		return pe.Status
	}
	return 0
}

// TestReadyz: ready while the root, backend and store are; 503 with the
// part named when the root's .xfsq/ is gone (an unmounted root shows the
// empty directory beneath) or the store does not answer.
func TestReadyz(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		ts := newServer(t, r)
		if code, _, body := ts.raw(t, "GET", "/readyz", "", ""); code != 200 {
			t.Fatalf("readyz: %d %s", code, body)
		}
		state := filepath.Join(r.Manager.Root, ".xfsq")
		if err := os.Rename(state, state+".away"); err != nil {
			t.Fatal(err)
		}
		code, _, body := ts.raw(t, "GET", "/readyz", "", "")
		if code != 503 || !strings.Contains(body, "root:") || !strings.Contains(body, errkind.NotReady.TypeURI()) {
			t.Errorf("readyz without .xfsq/: %d %s, want 503 naming the root", code, body)
		}
		os.Rename(state+".away", state)
		sandbox.TestStore(r.Manager).Close()
		code, _, body = ts.raw(t, "GET", "/readyz", "", "")
		if code != 503 || !strings.Contains(body, "store:") {
			t.Errorf("readyz with the store closed: %d %s, want 503 naming the store", code, body)
		}
	})
}

// TestAPIErrors: the failures every endpoint can answer, each with the
// status and problem type its error kind has. The requests are the
// operator's, past the auth checks TestAuthMatrix holds.
func TestAPIErrors(t *testing.T) {
	const p = "/v1/workspace/storage/projects"
	overBound := `{"project": "` + strings.Repeat("a", 1<<20) + `"}`
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(10<<20, "omni")
		r.Add(64<<10, "tiny")
		ts := newServer(t, r)
		if err := os.MkdirAll(filepath.Join(r.Manager.Root, "projects/omni/dir"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(r.Manager.Root, "projects/omni/file"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			method, path, body string
			kind               errkind.Kind
		}{
			{"POST", p, overBound, errkind.TooLarge},
			{"PATCH", p + "/omni", overBound, errkind.TooLarge},
			{"POST", p + "/omni/leases/run-1", overBound, errkind.TooLarge},
			{"PATCH", p + "/nosuch", `{"bytes_hard": "1m"}`, errkind.NotFound},
			{"PATCH", p + "/omni", `{"area": "attic", "bytes_hard": "1m"}`, errkind.Input},
			{"DELETE", p + "/nosuch", "", errkind.NotFound},
			{"DELETE", p + "/omni?purge=maybe", "", errkind.Input},
			{"GET", p + "/omni/admission?refresh=maybe", "", errkind.Input},
			{"GET", p + "/nosuch/leases", "", errkind.NotFound},
			{"POST", p + "/nosuch/leases/run-1", "", errkind.NotFound},
			{"POST", p + "/omni/leases/bad%20run", "", errkind.Input},
			{"DELETE", p + "/omni/leases/bad%20run", "", errkind.Input},
			{"GET", "/v1/workspace/storage/events?limit=0", "", errkind.Input},
			{"POST", p + "/omni/sweep", overBound, errkind.TooLarge},
			{"POST", p + "/omni/sweep", `{}`, errkind.Input},
			{"POST", p + "/nosuch/sweep", `{"dry_run": true}`, errkind.NotFound},
			// PUT and POST of a file are one handler, described twice.
			{"PUT", p + "/nosuch/files/a.txt", "x", errkind.NotFound},
			{"POST", p + "/nosuch/files/a.txt", "x", errkind.NotFound},
			{"POST", p + "/omni/files/dir", "x", errkind.Input},
			{"POST", p + "/tiny/files/big", strings.Repeat("x", 200<<10), errkind.Denied},
			{"DELETE", p + "/omni/files/nosuch", "", errkind.NotFound},
			{"GET", p + "/omni/files/?limit=0", "", errkind.Input},
			// A file where the path needs a directory is the path's fault.
			{"PUT", p + "/omni/files/file/x", "x", errkind.Input},
			{"DELETE", p + "/omni/files/file/x", "", errkind.Input},
		} {
			code, h, body := ts.raw(t, c.method, c.path, operatorToken, c.body)
			if code != c.kind.HTTPStatus() || h.Get("Content-Type") != server.ProblemType || !strings.Contains(body, `"type":"`+c.kind.TypeURI()+`"`) {
				t.Errorf("%s %s: %d %s %.200s, want a %d %s problem", c.method, c.path, code, h.Get("Content-Type"), body, c.kind.HTTPStatus(), c.kind)
			}
		}

		// A file over max_file_bytes: 413 whichever method writes it.
		if _, _, err := r.Manager.SetSetting(context.Background(), "max_file_bytes", "1000"); err != nil {
			t.Fatal(err)
		}
		for _, method := range []string{"PUT", "POST"} {
			if code, _, body := ts.raw(t, method, p+"/omni/files/big", operatorToken, strings.Repeat("x", 2000)); code != 413 || !strings.Contains(body, "max_file_bytes") {
				t.Errorf("%s of a file over max_file_bytes: %d %.200s, want 413 naming the setting", method, code, body)
			}
		}
		// A range past the file's end: 416 (net/http's text answer).
		if code, _, body := ts.raw(t, "PUT", p+"/omni/files/small", operatorToken, "hello"); code != 201 {
			t.Fatalf("upload: %d %s", code, body)
		}
		req, _ := http.NewRequest("GET", ts.URL+p+"/omni/files/small", nil)
		req.Header.Set("Authorization", "Bearer "+readerToken)
		req.Header.Set("Range", "bytes=100-200")
		if resp, err := ts.Client().Do(req); err != nil || resp.StatusCode != http.StatusRequestedRangeNotSatisfiable {
			t.Errorf("a range past the end: %v %v, want 416", err, resp)
		} else {
			resp.Body.Close()
		}

		// A project a killed `project add` left half-added is not ready:
		// 503 for what needs it whole, and admission denies it (an answer).
		r.Add(10<<20, "half")
		ctx := context.Background()
		if err := sandbox.TestStore(r.Manager).InTx(ctx, func(tx *store.Tx) error { return tx.SetProjectState(ctx, "half", store.StateAdding, "") }); err != nil {
			t.Fatal(err)
		}
		if a, err := ts.client(readerToken).Admission(ctx, "half", false); err != nil || a.Decision != sandbox.Deny {
			t.Errorf("admission of a half-added project: %v %+v, want deny", err, a)
		}
		for _, c := range [][3]string{
			{"PATCH", p + "/half", `{"bytes_hard": "1m"}`},
			{"POST", p + "/half/leases/run-1", ""},
		} {
			code, _, body := ts.raw(t, c[0], c[1], operatorToken, c[2])
			if code != 503 || !strings.Contains(body, errkind.NotReady.TypeURI()) || !strings.Contains(body, "adding") {
				t.Errorf("%s %s of a half-added project: %d %.200s, want 503 saying it is adding", c[0], c[1], code, body)
			}
		}

		// With the store closed under the server, every route that reads it
		// answers 500 with the detail withheld; the others still answer.
		// Walks the route table, so a new route needs a row here.
		noStore := map[string]int{
			"GET /healthz": 200, "GET /readyz": 503, "GET /v1/openapi.json": 200, "GET /metrics": 200,
			"GET /{$}": 200, "GET /ui/{file}": 200, // the dashboard's files read no store
			"GET /v1/system/health": 200, // its store part says the store does not answer
		}
		sandbox.TestStore(r.Manager).Close()
		for _, rt := range ts.s.Routes() {
			key := rt.Method + " " + rt.Pattern
			want, ok := noStore[key]
			if !ok {
				want = 500
			}
			path := strings.NewReplacer("{id}", "omni", "{run}", "run-1", "{key}", "scratch_ttl", "{path...}", "f.txt", "{file}", "app.css", "{$}", "").Replace(rt.Pattern)
			body := map[string]string{"POST " + p: `{"project": "fresh"}`, "PATCH " + p + "/{id}": `{"bytes_hard": "1m"}`,
				"POST " + p + "/{id}/sweep": `{"dry_run": true}`, "PUT " + p + "/{id}/files/{path...}": "x", "POST " + p + "/{id}/files/{path...}": "x",
				"PUT /v1/settings/{key}": `{"value": "2d"}`}[key]
			code, _, got := ts.raw(t, rt.Method, path, operatorToken, body)
			if code != want || (want == 500 && !strings.Contains(got, "the server's log says why")) {
				t.Errorf("%s with the store closed: %d %.200s, want %d", key, code, got, want)
			}
		}
	})
}

func workspaceOf(p apiv1.Project) apiv1.TreeStatus {
	for _, t := range p.Trees {
		if t.Area == area.Workspace {
			return t
		}
	}
	return apiv1.TreeStatus{}
}

// TestAPIFileDeleteLeavesMount: a recursive delete never crosses a mount
// inside the tree: it removes the rest, leaves the mount point and answers
// 409 saying so; a purge leaves it too and lists it.
func TestAPIFileDeleteLeavesMount(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(10<<20, "omni")
		ts := newServer(t, r)
		dir := filepath.Join(r.Manager.Root, "projects/omni/dir")
		if err := os.MkdirAll(filepath.Join(dir, "mnt"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "gone.txt"), []byte("x"), 0o644)
		mounttest.Tmpfs(t, filepath.Join(dir, "mnt"))
		os.WriteFile(filepath.Join(dir, "mnt", "kept.txt"), []byte("x"), 0o644)
		code, _, body := ts.raw(t, "DELETE", "/v1/workspace/storage/projects/omni/files/dir?recursive=1", operatorToken, "")
		if code != 409 || !strings.Contains(body, errkind.Conflict.TypeURI()) {
			t.Errorf("recursive delete over a mount: %d %.300s, want 409", code, body)
		}
		if _, err := os.Stat(filepath.Join(dir, "mnt", "kept.txt")); err != nil {
			t.Errorf("the mount's file: %v, want it kept", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "gone.txt")); !os.IsNotExist(err) {
			t.Errorf("the rest: %v, want it removed", err)
		}
		// A purge leaves the mount point too, and lists it with why.
		res, err := ts.client(operatorToken).RemoveProject(context.Background(), "omni", client.RemoveOptions{Purge: true})
		if err != nil || !res.Purged {
			t.Fatalf("purge: %v %+v", err, res)
		}
		var left []string
		for _, tr := range res.PurgedTrees {
			for _, l := range tr.Left {
				left = append(left, l.Path)
			}
		}
		if len(left) != 1 || left[0] != "projects/omni/dir/mnt" {
			t.Errorf("purge over a mount: left %v, want the mount point alone", left)
		}
	})
}

// TestClientStorage drives the storage, file and sweep endpoints through
// the client, as the end-to-end tests and other programs use them.
func TestClientStorage(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(10<<20, "omni")
		ts := newServer(t, r)
		ctx := context.Background()
		op, rd := ts.client(operatorToken), ts.client(readerToken)

		put, err := op.Upload(ctx, "omni", "", "docs/a.txt", strings.NewReader("hello"), 5)
		if err != nil || put.WrittenBytes != 5 || put.Replaced {
			t.Fatalf("put: %v %+v", err, put)
		}
		if put, err = op.Upload(ctx, "omni", "", "docs/a.txt", strings.NewReader("hello!"), -1); err != nil || !put.Replaced {
			t.Errorf("put again, chunked: %v %+v", err, put)
		}
		ls, err := rd.ListFiles(ctx, "omni", "", "docs")
		if err != nil || len(ls.Entries) != 1 || ls.Entries[0].Name != "a.txt" || ls.Entries[0].SizeBytes != 6 {
			t.Errorf("list: %v %+v", err, ls)
		}
		got, err := rd.GetFile(ctx, "omni", "", "docs/a.txt", nil)
		if err != nil || string(got.Body) != "hello!" || got.Header.Get("ETag") == "" {
			t.Fatalf("get: %v %+v", err, got)
		}
		again, err := rd.GetFile(ctx, "omni", "", "docs/a.txt", http.Header{"If-None-Match": {got.Header.Get("ETag")}})
		if err != nil || again.Status != http.StatusNotModified {
			t.Errorf("get with the ETag: %v %d, want 304", err, again.Status)
		}

		ov, err := rd.Overview(ctx, true)
		if err != nil || len(ov.Projects) != 1 || ov.Projects[0].Project != "omni" {
			t.Fatalf("overview: %v %+v", err, ov)
		}
		_, etag, _, err := rd.OverviewIfChanged(ctx, "")
		if err != nil || etag == "" {
			t.Fatalf("overview's ETag: %v %q", err, etag)
		}
		if _, _, notModified, err := rd.OverviewIfChanged(ctx, etag); err != nil || !notModified {
			t.Errorf("overview with its ETag: %v, not modified %v, want 304", err, notModified)
		}
		ps, err := rd.ProjectStorage(ctx, "omni", 2)
		if err != nil || len(ps.Trees) == 0 || ps.Trees[0].Tree == nil {
			t.Errorf("project storage after a refresh: %v %+v", err, ps)
		}
		// One snapshot: nothing is kept from before it to compare with.
		var pe *client.ProblemError
		if _, err := rd.Diff(ctx, "omni", client.DiffOptions{Area: "workspace", Since: time.Hour, Top: 3}); !errors.As(err, &pe) || pe.Status != 404 {
			t.Errorf("diff with one snapshot: %v, want a 404 problem", err)
		}

		// A workspace over its soft limit with nothing old enough to go:
		// the plan says it stays over.
		one := uint64(1)
		if _, err := op.SetLimits(ctx, "omni", "", client.Limits{}.WithBytesSoft(one)); err != nil {
			t.Fatal(err)
		}
		plan, err := op.PlanSweep(ctx, "omni")
		if err != nil || plan.PlanID == "" || !plan.DryRun {
			t.Fatalf("plan: %v %+v", err, plan)
		}
		if len(plan.OverSoft) != 1 || plan.OverSoft[0].Area != "workspace" || plan.OverSoft[0].SoftBytes != 1 {
			t.Errorf("plan over the soft limit: %+v, want the workspace over it", plan.OverSoft)
		}
		res, err := op.ApplyPlan(ctx, "omni", plan.PlanID)
		if err != nil || res.SweepID == "" || res.PlanID != plan.PlanID {
			t.Errorf("apply: %v %+v", err, res)
		}
		if _, err := op.ApplyPlan(ctx, "omni", plan.PlanID); status(err) != 422 {
			t.Errorf("a plan applied twice: %v, want 422", err)
		}
		if res, err = op.SweepNow(ctx, "omni"); err != nil || res.SweepID == "" {
			t.Errorf("sweep now: %v %+v", err, res)
		}
		// A project a run holds is skipped, with the run named.
		if _, err := op.AcquireLease(ctx, "omni", "run-7", time.Hour); err != nil {
			t.Fatal(err)
		}
		if plan, err = op.PlanSweep(ctx, "omni"); err != nil || len(plan.Skipped) != 1 || !strings.Contains(plan.Skipped[0].Reason, "run-7") {
			t.Errorf("plan of a leased project: %v %+v, want it skipped naming the run", err, plan)
		}
		if err := op.ReleaseLease(ctx, "omni", "run-7"); err != nil {
			t.Fatal(err)
		}

		del, err := op.DeleteFile(ctx, "omni", "", "docs", true)
		if err != nil || del.State != "done" || del.RemovedEntries != 2 {
			t.Errorf("delete: %v %+v", err, del)
		}
		if m, err := ts.client("").Metrics(ctx); err != nil || !strings.Contains(m, "xfsq_collector_success") {
			t.Errorf("metrics: %v %q", err, m)
		}
	})
}

// A JSON endpoint refuses a body sent as another media type with 415, a
// problem, before it reads the body or changes anything; the file
// endpoints take any (openapi.json describes both).
func TestJSONEndpointsRefuseOtherMediaTypes(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		ts := newServer(t, r)
		p := "/v1/workspace/storage/projects"
		for _, c := range []struct{ method, path, body string }{
			{"POST", p, `{"project":"omni"}`},
			{"PATCH", p + "/omni", `{"bytes_hard":1}`},
			{"POST", p + "/omni/leases/run-1", `{}`},
			{"POST", p + "/omni/sweep", `{"dry_run":true}`},
			{"PUT", "/v1/settings/scratch_ttl", `{"value":"2d"}`},
		} {
			if c.method != "POST" || c.path != p {
				if code, _, body := ts.raw(t, "POST", p, operatorToken, `{"project":"omni"}`); code != 201 && code != 409 {
					t.Fatalf("add omni: %d %s", code, body)
				}
			}
			req, _ := http.NewRequest(c.method, ts.URL+c.path, strings.NewReader(c.body))
			req.Header.Set("Authorization", "Bearer "+operatorToken)
			req.Header.Set("Content-Type", "text/plain")
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnsupportedMediaType || resp.Header.Get("Content-Type") != server.ProblemType ||
				!strings.Contains(string(b), server.TypeUnsupportedMediaType) {
				t.Errorf("%s %s as text/plain: %d %s %s, want a 415 problem", c.method, c.path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
			}
		}
		if _, err := ts.client(operatorToken).ProjectStorage(context.Background(), "omni", 0); err != nil {
			t.Fatalf("omni, added as JSON: %v", err)
		}
		if code, _, body := ts.raw(t, "GET", p+"/omni/leases", operatorToken, ""); code != 200 || body != "[]\n" {
			t.Errorf("a refused lease request took a lease: %d %s", code, body)
		}
	})
}
