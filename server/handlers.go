package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/units"
)

// fail is failRequest with the server's log.
// handlerFunc is a handler of the API: it writes its answer and returns
// nil, or returns the error it stopped at and writes nothing, as Caddy's
// admin handlers do; answered turns it into an http.HandlerFunc.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// answered is the one place a handler's error becomes an answer: a
// problem document, and a log line for what the client is not told.
// log nil: nothing is logged.
func answered(log *slog.Logger, h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			failRequest(log, w, r, err)
		}
	}
}

// failRequest is every handler's failure: err answered as a problem
// (WriteProblem), and what the client is not told — an internal error's
// detail (ProblemOf) — logged with the request's id. A request whose
// client went away, or that a stop cut off, is logged at info: nobody
// reads the answer, and it is no failure of the server's.
func failRequest(log *slog.Logger, w http.ResponseWriter, r *http.Request, err error) {
	if log != nil {
		level, msg := slog.LevelError, "request failed"
		if r.Context().Err() != nil {
			level, msg = slog.LevelInfo, "request ended by the client"
		}
		if level == slog.LevelInfo || errkind.Of(err) == errkind.Internal {
			log.LogAttrs(r.Context(), level, msg, slog.String("request_id", w.Header().Get("X-Request-Id")),
				slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("error", err.Error()))
		}
	}
	WriteProblem(w, err)
}

// writeBody encodes v; the status is already written.
func writeBody(w http.ResponseWriter, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// queryOne is the value of a query parameter given at most once ("" when
// absent). Given more than once, which one counts is a guess the client
// cannot see (with dry_run=0&dry_run=1 the first would delete for real):
// refused.
func queryOne(r *http.Request, name string) (string, error) {
	q, err := queryValues(r, name)
	return q[name], err
}

// queryValues is queryOne of each name, the query parsed once: a name
// absent has no entry.
func queryValues(r *http.Request, names ...string) (map[string]string, error) {
	if r.URL.RawQuery == "" { // most requests: no map parsed for nothing
		return nil, nil
	}
	q := r.URL.Query()
	out := make(map[string]string, len(names))
	for _, name := range names {
		values := q[name]
		if len(values) > 1 {
			return nil, errkind.New(errkind.Input, fmt.Errorf("query parameter %s given %d times: give it once", name, len(values)))
		}
		if len(values) == 1 {
			out[name] = values[0]
		}
	}
	return out, nil
}

// queryBool reads a flag of the query: absent, 0/false or 1/true.
func queryBool(r *http.Request, name string) (bool, error) {
	if r.URL.RawQuery == "" { // most requests: no map parsed for nothing
		return false, nil
	}
	v, err := queryOne(r, name)
	if err != nil {
		return false, err
	}
	switch v {
	case "", "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	}
	return false, errkind.New(errkind.Input, fmt.Errorf("query parameter %s=%q: use 1 or 0", name, v))
}

// change is a request's limits as the library's change: nil unchanged.
func change(l apiv1.Limits) sandbox.LimitChange {
	return sandbox.LimitChange{BytesSoft: (*uint64)(l.BytesSoft), BytesHard: (*uint64)(l.BytesHard),
		InodesSoft: (*uint64)(l.InodesSoft), InodesHard: (*uint64)(l.InodesHard)}
}

// DefaultLeaseTTL is a lease's TTL when the request gives none, as the CLI's.
const DefaultLeaseTTL = 2 * time.Hour

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, apiv1.Healthz{Status: "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if err := s.m.Ready(r.Context(), s.ready); err != nil {
		s.log.Warn("not ready", "request_id", w.Header().Get("X-Request-Id"), "error", err.Error(), "cause", fmt.Sprint(errors.Unwrap(err)))
		WriteProblem(w, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.Ready{Status: "ready", Backend: s.m.BackendName()})
}

func (s *Server) systemHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.health.Collect(r.Context()))
}

// projects lists the projects the caller may see, as project list does,
// without reading any usage: what a client used to parse the overview for.
func (s *Server) projects(w http.ResponseWriter, r *http.Request) error {
	ps, err := s.m.List(r.Context())
	if err != nil {
		return err
	}
	c := CallerOf(r.Context())
	seen := make([]sandbox.ProjectRecord, 0, len(ps))
	for _, p := range ps {
		if c.Sees(p.Name) {
			seen = append(seen, p)
		}
	}
	writeJSON(w, http.StatusOK, seen)
	return nil
}

func (s *Server) addProject(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.AddRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Project == "" {
		return errkind.New(errkind.Input, errors.New(`field "project": give the new project's name`))
	}
	p, err := s.m.Add(r.Context(), req.Project, sandbox.AddOptions{Workspace: change(req.Workspace), Cache: change(req.Cache), Scratch: change(req.Scratch)})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/workspace/storage/projects/"+p.Name)
	writeJSON(w, http.StatusCreated, p.BackendOnce())
	return nil
}

func (s *Server) setProject(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.SetRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	p, err := s.m.Set(r.Context(), r.PathValue("id"), req.Area, change(req.Limits))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, p.BackendOnce())
	return nil
}

func (s *Server) removeProject(w http.ResponseWriter, r *http.Request) error {
	var o sandbox.RemoveOptions
	for _, f := range []struct {
		name string
		dst  *bool
	}{{"purge", &o.Purge}, {"force", &o.Force}, {"dry_run", &o.DryRun}} {
		v, err := queryBool(r, f.name)
		if err != nil {
			return err
		}
		*f.dst = v
	}
	res, err := s.m.Remove(r.Context(), r.PathValue("id"), o)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (s *Server) admission(w http.ResponseWriter, r *http.Request) error {
	refresh, err := queryBool(r, "refresh")
	if err != nil {
		return err
	}
	if refresh {
		// Shared with the overview's refreshes (refresh_window): a reader
		// asking again and again must not make the server walk each time.
		if err := s.m.RefreshShared(r.Context(), r.PathValue("id")); err != nil {
			return err
		}
	}
	// A deny is an answer to the question, not a failure: 200.
	a, err := s.m.Check(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	// Asked before every run: written without reflection
	// (AppendAdmissionJSON is encoding/json's output, byte for byte).
	buf := admissionBuffers.Get().(*[]byte)
	*buf = sandbox.AppendAdmissionJSON((*buf)[:0], sandbox.AdmissionBackendOnce(a))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(*buf)))
	w.WriteHeader(http.StatusOK)
	w.Write(*buf)
	admissionBuffers.Put(buf)
	return nil
}

var admissionBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func (s *Server) leases(w http.ResponseWriter, r *http.Request) error {
	ls, err := s.m.ProjectLeases(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ls)
	return nil
}

func (s *Server) acquireLease(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.LeaseRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	ttl := DefaultLeaseTTL
	if req.TTL != "" {
		d, err := units.ParseDuration(req.TTL)
		if err != nil {
			return errkind.New(errkind.Input, fmt.Errorf(`field "ttl": %v`, err))
		}
		ttl = d
	}
	l, err := s.m.AcquireLease(r.Context(), r.PathValue("id"), r.PathValue("run"), ttl)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, l)
	return nil
}

func (s *Server) releaseLease(w http.ResponseWriter, r *http.Request) error {
	if err := s.m.ReleaseLease(r.Context(), r.PathValue("id"), r.PathValue("run")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// events is one page of the journal; a limited reader sees only its
// projects' records (and 404 for a project filter it may not see).
func (s *Server) events(w http.ResponseWriter, r *http.Request) error {
	q, err := queryValues(r, "type", "project", "cursor", "since", "limit")
	if err != nil {
		return err
	}
	eq := sandbox.EventQuery{Type: q["type"], Project: q["project"], Cursor: q["cursor"]}
	if v := q["since"]; v != "" {
		t, err := sandbox.ParseSince(v, time.Now())
		if err != nil {
			return err
		}
		eq.Since = t
	}
	if v := q["limit"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return errkind.New(errkind.Input, fmt.Errorf("query parameter limit=%q: use 1 to %d", v, sandbox.MaxEventLimit))
		}
		eq.Limit = n
	}
	if err := eventHosts(r, &eq); err != nil {
		return err
	}
	c := CallerOf(r.Context())
	if eq.Project != "" && !c.Sees(eq.Project) {
		return projectNotFound(eq.Project)
	}
	if c.Projects != nil {
		eq.Projects = c.Projects
	}
	page, err := s.m.Events(r.Context(), eq)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}
