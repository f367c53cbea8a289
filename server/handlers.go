package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/project"
	"github.com/xfsq/xfsq/units"
)

// fail is failRequest with the server's log.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	failRequest(s.log, w, r, err)
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

// queryBool reads a flag of the query: absent, 0/false or 1/true.
func queryBool(r *http.Request, name string) (bool, error) {
	if r.URL.RawQuery == "" { // most requests: no map parsed for nothing
		return false, nil
	}
	values := r.URL.Query()[name]
	if len(values) > 1 {
		// Which one counts is a guess the client cannot see: with
		// dry_run=0&dry_run=1 the first would delete for real.
		return false, errkind.New(errkind.Input, fmt.Errorf("query parameter %s given %d times: give it once", name, len(values)))
	}
	var v string
	if len(values) == 1 {
		v = values[0]
	}
	switch v {
	case "", "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	}
	return false, errkind.New(errkind.Input, fmt.Errorf("query parameter %s=%q: use 1 or 0", name, v))
}

// Size is a byte count in a request body: a JSON number, or a string in
// the CLI's forms ("10GiB", "512k").
type Size uint64

func (s *Size) UnmarshalJSON(b []byte) error { return parseQuantity(b, (*uint64)(s), units.ParseSize) }

// Count is a file count in a request body: a number, or a string ("10k").
type Count uint64

func (c *Count) UnmarshalJSON(b []byte) error {
	return parseQuantity(b, (*uint64)(c), units.ParseCount)
}

func parseQuantity(b []byte, dst *uint64, parse func(string) (uint64, error)) error {
	var n uint64
	if err := json.Unmarshal(b, &n); err == nil {
		*dst = n
		return nil
	}
	// A json.UnmarshalTypeError: the decoder adds the field's name to it,
	// so the 400 names the field (decodeJSON).
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return &json.UnmarshalTypeError{Value: string(b) + " (use a whole number or a string such as \"10GiB\")", Type: reflect.TypeFor[uint64]()}
	}
	n, err := parse(str)
	if err != nil {
		return &json.UnmarshalTypeError{Value: strconv.Quote(str) + " (" + err.Error() + ")", Type: reflect.TypeFor[uint64]()}
	}
	*dst = n
	return nil
}

// Limits are a tree's limits in a request; absent fields are unchanged
// (PATCH) or the defaults (POST).
type Limits struct {
	BytesSoft  *Size  `json:"bytes_soft,omitempty"`
	BytesHard  *Size  `json:"bytes_hard,omitempty"`
	InodesSoft *Count `json:"inodes_soft,omitempty"`
	InodesHard *Count `json:"inodes_hard,omitempty"`
}

func (l Limits) change() project.LimitChange {
	return project.LimitChange{BytesSoft: (*uint64)(l.BytesSoft), BytesHard: (*uint64)(l.BytesHard),
		InodesSoft: (*uint64)(l.InodesSoft), InodesHard: (*uint64)(l.InodesHard)}
}

// AddRequest is the body of POST /v1/workspace/storage/projects.
type AddRequest struct {
	Project   string `json:"project"`
	Workspace Limits `json:"workspace"`
	Cache     Limits `json:"cache"`
}

// SetRequest is the body of PATCH …/projects/{id}: the limits of one tree.
type SetRequest struct {
	Area string `json:"area,omitempty"` // workspace (default) or cache
	Limits
}

// LeaseRequest is the body of POST …/leases/{run}.
type LeaseRequest struct {
	// TTL is a duration ("2h", "1d"); default 2h, at most 7d.
	TTL string `json:"ttl,omitempty"`
}

// DefaultLeaseTTL is a lease's TTL when the request gives none, as the CLI's.
const DefaultLeaseTTL = 2 * time.Hour

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if err := s.m.Ready(r.Context(), s.ready); err != nil {
		s.log.Warn("not ready", "request_id", w.Header().Get("X-Request-Id"), "error", err.Error(), "cause", fmt.Sprint(errors.Unwrap(err)))
		WriteProblem(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready", "backend": s.m.BackendName()})
}

func (s *Server) systemHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.health.Collect(r.Context()))
}

func (s *Server) addProject(w http.ResponseWriter, r *http.Request) {
	var req AddRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Project == "" {
		s.fail(w, r, errkind.New(errkind.Input, errors.New(`field "project": give the new project's name`)))
		return
	}
	p, err := s.m.Add(r.Context(), req.Project, project.AddOptions{Workspace: req.Workspace.change(), Cache: req.Cache.change()})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/workspace/storage/projects/"+p.Name)
	writeJSON(w, http.StatusCreated, p)
}

func (s *Server) setProject(w http.ResponseWriter, r *http.Request) {
	var req SetRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := s.m.Set(r.Context(), r.PathValue("id"), req.Area, req.Limits.change())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) removeProject(w http.ResponseWriter, r *http.Request) {
	var o project.RemoveOptions
	for _, f := range []struct {
		name string
		dst  *bool
	}{{"purge", &o.Purge}, {"force", &o.Force}, {"dry_run", &o.DryRun}} {
		v, err := queryBool(r, f.name)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		*f.dst = v
	}
	res, err := s.m.Remove(r.Context(), r.PathValue("id"), o)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) admission(w http.ResponseWriter, r *http.Request) {
	refresh, err := queryBool(r, "refresh")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if refresh {
		// Shared with the overview's refreshes (refresh_window): a reader
		// asking again and again must not make the server walk each time.
		if err := s.m.RefreshShared(r.Context(), r.PathValue("id")); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	// A deny is an answer to the question, not a failure: 200.
	a, err := s.m.Check(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// Asked before every run: written without reflection (AppendJSON is
	// encoding/json's output, byte for byte).
	buf := admissionBuffers.Get().(*[]byte)
	*buf = a.AppendJSON((*buf)[:0])
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(*buf)))
	w.WriteHeader(http.StatusOK)
	w.Write(*buf)
	admissionBuffers.Put(buf)
}

var admissionBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func (s *Server) leases(w http.ResponseWriter, r *http.Request) {
	ls, err := s.m.ProjectLeases(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ls)
}

func (s *Server) acquireLease(w http.ResponseWriter, r *http.Request) {
	var req LeaseRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	ttl := DefaultLeaseTTL
	if req.TTL != "" {
		d, err := units.ParseDuration(req.TTL)
		if err != nil {
			s.fail(w, r, errkind.New(errkind.Input, fmt.Errorf(`field "ttl": %v`, err)))
			return
		}
		ttl = d
	}
	l, err := s.m.AcquireLease(r.Context(), r.PathValue("id"), r.PathValue("run"), ttl)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, l)
}

func (s *Server) releaseLease(w http.ResponseWriter, r *http.Request) {
	if err := s.m.ReleaseLease(r.Context(), r.PathValue("id"), r.PathValue("run")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// events is one page of the journal; a limited reader sees only its
// projects' records (and 404 for a project filter it may not see).
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	eq := project.EventQuery{Type: q.Get("type"), Project: q.Get("project"), Cursor: q.Get("cursor")}
	if v := q.Get("since"); v != "" {
		t, err := project.ParseSince(v, time.Now())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		eq.Since = t
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			s.fail(w, r, errkind.New(errkind.Input, fmt.Errorf("query parameter limit=%q: use 1 to %d", v, project.MaxEventLimit)))
			return
		}
		eq.Limit = n
	}
	c := CallerOf(r.Context())
	if eq.Project != "" && !c.Sees(eq.Project) {
		s.fail(w, r, projectNotFound(eq.Project))
		return
	}
	if c.Projects != nil {
		eq.Projects = c.Projects
	}
	page, err := s.m.Events(r.Context(), eq)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}
