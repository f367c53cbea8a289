package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/health"
	"github.com/xfsq/xfsq/sandbox"
)

// Config is what a Server serves.
type Config struct {
	// Root is the open sandbox root; the server uses it, the caller closes it.
	Root *sandbox.Root
	// Tokens are the bearer tokens in force (daemon.TokenFile's are
	// reloaded on SIGHUP).
	Tokens Tokens
	// Log receives the server's errors, and the access log unless
	// AccessLog is set; nil: slog.Default().
	Log *slog.Logger
	// AccessLog, when set, receives the access log: one JSON line per
	// request, exactly as Log would write it through a slog.JSONHandler on
	// the same writer, but without slog's generic path (serve sets it to
	// its log's writer). It may be shared with Log's writer.
	AccessLog io.Writer
	// Health answers GET /v1/system/health; nil: the route is absent.
	Health *health.Checker
	// Metrics is GET /metrics; nil: the route is absent.
	Metrics http.Handler
	// MetricsToken, when set, is the bearer token GET /metrics requires
	// (LoadMetricsToken); "": /metrics needs none, and the bind address
	// and the Host check are its guard.
	MetricsToken string
	// Listen is the address the server listens on: its host is a Host the
	// server answers (an unspecified one, 0.0.0.0 or ::, lets any IP
	// literal through). "": only loopback names and AllowedHosts.
	Listen string
	// AllowedHosts are more names a request's Host may give (a proxy's
	// public name). Any other Host, loopback names aside, is refused with
	// 421 before a handler runs: a page that rebinds its name to this
	// server must not reach it through the operator's browser.
	AllowedHosts []string
	// DrainLimit bounds how much of a refused request's unread body is
	// read and discarded so that its answer reaches a client that sends
	// the whole body before reading (closing on unread data resets the
	// connection, and the answer is lost); 0: the upload_refusal_drain
	// setting, read when needed.
	DrainLimit int64
	// Routes are more routes, checked by the same middleware and listed by
	// Routes() like the server's own.
	Routes []Route
	// ReadyTimeout bounds the store's answer to /readyz; 0 is 2 s.
	ReadyTimeout time.Duration
	// StoreBudget bounds every request's store calls together
	// (storeBudget); 0: the api_store_budget setting, read again every
	// 10 s.
	StoreBudget time.Duration
}

// Route is one entry of the route table: every request the server
// answers goes through one, and its Role is checked before its Handler
// runs. A Pattern with {id} names a project: a caller that may not see it
// gets 404 before the handler runs.
type Route struct {
	Method  string
	Pattern string
	Role    Role
	Handler http.HandlerFunc
}

// ProjectScoped says the route's {id} is a project name.
func (r Route) ProjectScoped() bool { return strings.Contains(r.Pattern, "{id}") }

// Server is the HTTP API over one open root.
type Server struct {
	root    *sandbox.Root
	m       *sandbox.Manager
	tokens  Tokens
	log     *slog.Logger
	access  *accessLog // nil: the access log goes to log
	health  *health.Checker
	metrics http.Handler
	ready   time.Duration
	routes  []Route
	mux     *http.ServeMux
	front   http.Handler // the mux behind unrouted's check
	hosts   *hostPolicy
	// metricsToken is the SHA-256 of Config.MetricsToken; nil: none.
	metricsToken []byte
	drainLimit   int64
	budget       *storeBudget

	storage *storageAPI // the overview and project detail (storage.go)
	files   *filesAPI   // the file endpoints (files.go)
	sweep   *sweepAPI   // the sweep endpoint (sweep.go)
}

// New builds the server and its route table.
func New(cfg Config) (*Server, error) {
	if cfg.Root == nil || cfg.Root.Manager == nil {
		return nil, errors.New("server: no root")
	}
	if cfg.Tokens == nil {
		return nil, errkind.New(errkind.Input, errors.New("server: no tokens: give a token file"))
	}
	s := &Server{root: cfg.Root, m: cfg.Root.Manager, tokens: cfg.Tokens, log: cfg.Log, health: cfg.Health, metrics: cfg.Metrics, ready: cfg.ReadyTimeout}
	if cfg.AccessLog != nil {
		s.access = newAccessLog(cfg.AccessLog)
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.ready <= 0 {
		s.ready = 2 * time.Second
	}
	var err error
	if s.hosts, err = newHostPolicy(cfg.Listen, cfg.AllowedHosts); err != nil {
		return nil, errkind.New(errkind.Input, err)
	}
	if cfg.MetricsToken != "" {
		sum := sha256.Sum256([]byte(cfg.MetricsToken))
		s.metricsToken = sum[:]
	}
	s.drainLimit = cfg.DrainLimit
	s.budget = newStoreBudget(s.m, cfg.StoreBudget)
	if s.storage, err = newStorageAPI(cfg.Root); err != nil {
		return nil, err
	}
	s.files, s.sweep = newFilesAPI(cfg.Root), newSweepAPI(cfg.Root)
	s.routes = append(s.coreRoutes(), cfg.Routes...)
	s.mux = http.NewServeMux()
	seen := map[string]bool{}
	for _, rt := range s.routes {
		key := rt.Method + " " + rt.Pattern
		if seen[key] || rt.Handler == nil {
			return nil, fmt.Errorf("server: route %s given twice or without a handler", key)
		}
		seen[key] = true
		s.mux.Handle(key, s.guard(rt))
	}
	// Anything else is a problem body, as every error is, not ServeMux's
	// text: 405 with Allow for a known path asked with another method,
	// else 404. paths holds each route's pattern without its method.
	paths := http.NewServeMux()
	allow := map[string][]string{}
	for _, rt := range s.routes {
		if allow[rt.Pattern] == nil {
			paths.HandleFunc(rt.Pattern, func(http.ResponseWriter, *http.Request) {})
		}
		allow[rt.Pattern] = append(allow[rt.Pattern], rt.Method)
		if rt.Method == "GET" {
			allow[rt.Pattern] = append(allow[rt.Pattern], "HEAD")
		}
	}
	s.mux.Handle("/", s.guard(Route{Pattern: "/", Handler: func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := paths.Handler(r); pattern != "" {
			methods := allow[pattern]
			w.Header().Set("Allow", strings.Join(methods, ", "))
			w.Header().Set("Content-Type", ProblemType)
			w.WriteHeader(http.StatusMethodNotAllowed)
			writeBody(w, Problem{Type: TypeMethodNotAllowed, Title: http.StatusText(http.StatusMethodNotAllowed), Status: http.StatusMethodNotAllowed,
				Detail: fmt.Sprintf("%s %s: use %s", r.Method, r.URL.Path, strings.Join(methods, ", "))})
			return
		}
		WriteProblem(w, errkind.New(errkind.NotFound, fmt.Errorf("no such endpoint: %s %s", r.Method, r.URL.Path)))
	}}))
	s.front = cleanPathsOnly(s.mux, func(h http.HandlerFunc) http.Handler { return s.guard(Route{Pattern: "/", Handler: h}) })
	return s, nil
}

// cleanPathsOnly fronts mux: ServeMux answers a path it would clean
// ("//", "/./", "..") or complete with a slash ("…/files") with its own
// redirect, an HTML body and none of the guard's headers. Such a path
// names no endpoint as given: it gets the 404 problem every unknown path
// gets, saying which path would, through wrap (the server's guard).
func cleanPathsOnly(mux *http.ServeMux, wrap func(http.HandlerFunc) http.Handler) http.Handler {
	notFound := wrap(func(w http.ResponseWriter, r *http.Request) {
		h, _ := mux.Handler(r)
		to := &locationOnly{h: http.Header{}}
		h.ServeHTTP(to, r)
		WriteProblem(w, errkind.WithHint(errkind.NotFound, fmt.Errorf("no such endpoint: %s %s: paths are matched as given", r.Method, r.URL.Path),
			"ask for "+to.h.Get("Location")))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, _ := mux.Handler(r); reflect.TypeOf(h) == redirectType {
			notFound.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// redirectType is the type of ServeMux's redirects; none of the routes'
// handlers is one.
var redirectType = reflect.TypeOf(http.RedirectHandler("/", http.StatusTemporaryRedirect))

// locationOnly keeps the header a redirect writes, and nothing else.
type locationOnly struct{ h http.Header }

func (l *locationOnly) Header() http.Header         { return l.h }
func (l *locationOnly) Write(b []byte) (int, error) { return len(b), nil }
func (l *locationOnly) WriteHeader(int)             {}

// Warm reads and encodes what the first requests would otherwise wait
// for (sandbox.Manager.Warm): the overview and every project's check. A
// server started under load answers its first overview requests in
// microseconds instead of half a second each. Call it beside Serve, not
// before: requests are answered meanwhile, only slower.
func (s *Server) Warm(ctx context.Context) error {
	ov, err := s.m.Warm(ctx)
	if err != nil {
		return err
	}
	return s.storage.warm(ov)
}

// Routes is the route table, in the order it was built.
func (s *Server) Routes() []Route { return append([]Route(nil), s.routes...) }

// Handler is the server's whole HTTP surface.
func (s *Server) Handler() http.Handler { return s.front }

// coreRoutes is the table of the endpoints this file's package answers
// itself; Config.Routes adds the others.
func (s *Server) coreRoutes() []Route {
	const p = "/v1/workspace/storage/projects"
	rs := []Route{
		{"GET", "/healthz", RoleNone, s.healthz},
		{"GET", "/readyz", RoleNone, s.readyz},
		{"GET", "/v1/openapi.json", RoleNone, s.openAPI},
		// The dashboard's files hold no data; what the page shows it asks
		// of the routes below with the operator's token (dashboard.go).
		{"GET", "/{$}", RoleNone, s.dashboard},
		{"GET", "/ui/{file}", RoleNone, s.dashboardFile},
		{"GET", p, RoleReader, answered(s.log, s.projects)},
		{"POST", p, RoleOperator, answered(s.log, s.addProject)},
		{"PATCH", p + "/{id}", RoleOperator, answered(s.log, s.setProject)},
		{"DELETE", p + "/{id}", RoleOperator, answered(s.log, bodiless(s.removeProject))},
		{"GET", p + "/{id}/admission", RoleReader, answered(s.log, s.admission)},
		{"GET", p + "/{id}/leases", RoleReader, answered(s.log, s.leases)},
		{"POST", p + "/{id}/leases/{run}", RoleOperator, answered(s.log, s.acquireLease)},
		{"DELETE", p + "/{id}/leases/{run}", RoleOperator, answered(s.log, bodiless(s.releaseLease))},
		{"GET", "/v1/workspace/storage/events", RoleReader, answered(s.log, s.events)},
		{"GET", "/v1/workspace/storage", RoleReader, answered(s.log, s.storage.Overview)},
		{"GET", "/v1/workspace/storage/summary", RoleReader, answered(s.log, s.storage.Summary)},
		{"GET", p + "/{id}", RoleReader, answered(s.log, s.storage.Project)},
		{"GET", p + "/{id}/diff", RoleReader, answered(s.log, s.storage.Diff)},
		{"GET", p + "/{id}/history", RoleReader, answered(s.log, s.storage.ProjectHistory)},
		{"GET", "/v1/workspace/storage/history", RoleReader, answered(s.log, s.storage.DiskHistory)},
		// PUT, GET, DELETE: the auth matrix makes the requests in this order.
		// The tree's top: {path...} matches it too, but a description's
		// path parameter is never empty, so it is an operation of its own.
		{"GET", p + "/{id}/files/{$}", RoleReader, answered(s.log, s.files.Get)},
		{"PUT", p + "/{id}/files/{path...}", RoleOperator, answered(s.log, s.files.Put)},
		{"POST", p + "/{id}/files/{path...}", RoleOperator, answered(s.log, s.files.Put)},
		{"GET", p + "/{id}/files/{path...}", RoleReader, answered(s.log, s.files.Get)},
		{"DELETE", p + "/{id}/files/{path...}", RoleOperator, answered(s.log, bodiless(s.files.Delete))},
		{"POST", p + "/{id}/sweep", RoleOperator, answered(s.log, s.sweep.Sweep)},
		{"GET", "/v1/workspace/storage/report", RoleReader, answered(s.log, s.report)},
		{"GET", "/v1/settings", RoleReader, answered(s.log, s.settings)},
		{"GET", "/v1/settings/{key}", RoleReader, answered(s.log, s.setting)},
		{"PUT", "/v1/settings/{key}", RoleOperator, answered(s.log, s.setSetting)},
		{"DELETE", "/v1/settings/{key}", RoleOperator, answered(s.log, bodiless(s.resetSetting))},
		// Doctor reads every project's trees and the kernel's IDs: the
		// operator's, as the repair is.
		{"GET", "/v1/system/doctor", RoleOperator, answered(s.log, s.doctor)},
		{"POST", "/v1/system/doctor/fix", RoleOperator, answered(s.log, bodiless(s.doctorFix))},
	}
	rs = append(rs, s.fleetRoutes()...)
	if s.health != nil {
		rs = append(rs, Route{"GET", "/v1/system/health", RoleReader, s.systemHealth})
	}
	if s.metrics != nil {
		rs = append(rs, Route{"GET", "/metrics", RoleNone, s.serveMetrics})
	}
	return rs
}

// statusWriter remembers the status for the access log.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
	body   *watchedBody // the request's, nil without one
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		if code >= 400 && w.body != nil && !w.body.eof {
			// Refused with the body unread: it is drained for a moment
			// only (drainUnread), so what follows on the wire is no request.
			w.Header().Set("Connection", "close")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection (flush, deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func newRequestID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// The problem types of the two auth failures: no error kind of the
// library is one, so they have their own stable URIs.
const (
	TypeUnauthorized = "https://xfsq.dev/problems/unauthorized"
	TypeForbidden    = "https://xfsq.dev/problems/forbidden"
	// TypeMethodNotAllowed: a known path asked with a method it does not take.
	TypeMethodNotAllowed = "https://xfsq.dev/problems/method-not-allowed"
)

func writeAuthProblem(w http.ResponseWriter, status int, typ, detail string) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="xfsq"`)
	}
	w.Header().Set("Content-Type", ProblemType)
	w.WriteHeader(status)
	writeBody(w, Problem{Type: typ, Title: http.StatusText(status), Status: status, Detail: detail})
}

// guard is the middleware every route runs under: request id, access log,
// the token and its role, the project a limited reader may see, and the
// actor the library journals.
func (s *Server) guard(rt Route) http.Handler {
	scoped := rt.ProjectScoped()
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := newRequestID()
		body := watchBody(&r)
		if body != nil {
			// net/http would otherwise read up to 256 KiB of an unread body
			// when the answer's header goes out, for as long as the
			// client trickles it; drainUnread reads it under a deadline.
			http.NewResponseController(rw).EnableFullDuplex()
		}
		w := &statusWriter{ResponseWriter: rw, body: body}
		// One budget for every store call the request makes, the drain's
		// read of its setting included (storeBudget).
		budgeted := sandbox.WithStoreBudget(r.Context(), s.budget.get())
		w.Header().Set("X-Request-Id", id)
		var caller Caller
		defer func() {
			if v := recover(); v != nil {
				s.log.Error("handler panicked", "request_id", id, "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v))
				if w.status == 0 {
					WriteProblem(w, errors.New("panic"))
				}
			}
			rec := accessRecord{at: time.Now(), method: r.Method, path: r.URL.Path, status: w.status,
				bytes: w.bytes, token: caller.Name, requestID: id}
			rec.seconds = rec.at.Sub(start).Seconds()
			if s.access != nil {
				s.access.write(&rec)
			} else if h := s.log.Handler(); h.Enabled(r.Context(), slog.LevelInfo) {
				h.Handle(r.Context(), rec.record())
			}
			s.drainUnread(rw, r.WithContext(budgeted), body)
		}()
		if !s.hosts.allows(r.Host) {
			writeMisdirected(w, r.Host)
			return
		}
		if rt.Role != RoleNone {
			var ok bool
			bearer, given := bearerToken(r)
			if !given {
				writeAuthProblem(w, http.StatusUnauthorized, TypeUnauthorized, "no bearer token: send Authorization: Bearer TOKEN")
				return
			}
			if caller, ok = s.tokens.Lookup(bearer); !ok {
				writeAuthProblem(w, http.StatusUnauthorized, TypeUnauthorized, "the bearer token is not valid")
				return
			}
			if caller.Role < rt.Role {
				writeAuthProblem(w, http.StatusForbidden, TypeForbidden,
					fmt.Sprintf("token %q is a %s; %s %s needs an %s", caller.Name, caller.Role, r.Method, rt.Pattern, rt.Role))
				return
			}
			if scoped && !caller.Sees(r.PathValue("id")) {
				WriteProblem(w, projectNotFound(r.PathValue("id")))
				return
			}
		}
		ctx := withCaller(budgeted, caller)
		if caller.Name != "" {
			ctx = sandbox.WithActor(ctx, caller.Name)
		}
		out, finish := gzipped(w, r)
		rt.Handler(out, r.WithContext(ctx))
		finish()
	})
}

// projectNotFound is the library's answer for a project that does not
// exist, word for word, so that a limited reader cannot tell the two apart.
func projectNotFound(name string) error {
	return errkind.WithFix(errkind.NotFound, fmt.Errorf("project %q %w", name, sandbox.ErrNotFound), errkind.Fix("see %s", errkind.Do(errkind.OpProjectList, "")))
}

// bearerToken is the token of an Authorization: Bearer header; given is
// false when there is no such header.
func bearerToken(r *http.Request) (token string, given bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", false
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", true
	}
	return strings.TrimSpace(tok), true
}

// serveMetrics is GET /metrics, behind Config.MetricsToken when one is set.
// A token of the token file is not enough: a reader limited to one project
// must not read every project's figures here.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if s.metricsToken != nil {
		bearer, given := bearerToken(r)
		sum := sha256.Sum256([]byte(bearer))
		switch {
		case !given:
			writeAuthProblem(w, http.StatusUnauthorized, TypeUnauthorized, "/metrics needs the metrics token: send Authorization: Bearer TOKEN (Prometheus: authorization.credentials_file)")
			return
		case subtle.ConstantTimeCompare(sum[:], s.metricsToken) != 1:
			writeAuthProblem(w, http.StatusUnauthorized, TypeUnauthorized, "the bearer token is not the metrics token")
			return
		}
	}
	s.metrics.ServeHTTP(w, r)
}
