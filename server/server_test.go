package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/quota"
)

func TestProblemOf(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
		detail string
	}{
		{errkind.New(errkind.Input, errors.New(`project name "A" is invalid`)), 400, `project name "A" is invalid`},
		{fmt.Errorf("project %q %w", "x", errkind.Sentinel(errkind.NotFound, "not found")), 404, `project "x" not found`},
		{errkind.New(errkind.Conflict, errors.New("sweep busy")), 409, "sweep busy"},
		{errkind.New(errkind.NotReady, errors.New("not initialised")), 503, "not initialised"},
		{errkind.New(errkind.Unprocessable, errors.New("sweep plan refused: plan pl-1 was already applied")), 422, "sweep plan refused: plan pl-1 was already applied"},
		{&quota.LimitError{Tree: "t", Limit: "bytes_hard", Used: 1, Requested: 2, Max: 2}, 507, ""},
		{errors.New("open /srv/x: permission denied"), 500, "the operation failed; the server's log says why"},
	} {
		p := ProblemOf(c.err)
		if p.Status != c.status || (c.detail != "" && p.Detail != c.detail) || p.Title != http.StatusText(c.status) {
			t.Errorf("%v: %+v, want %d %q", c.err, p, c.status, c.detail)
		}
	}
}

func TestWriteProblem(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteProblem(rec, errkind.WithHint(errkind.NotReady, errors.New("no store"), "run xfsq init"))
	var p Problem
	if rec.Code != 503 || rec.Header().Get("Content-Type") != ProblemType || json.Unmarshal(rec.Body.Bytes(), &p) != nil || p.Fix != "run xfsq init" {
		t.Errorf("%d %s %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
}

// Every handler's failure goes through answered and is logged the same way: an internal error at
// error level with the request's id (its detail is withheld from the
// client), a request its client abandoned at info, and a client's own
// mistake not at all (the access log has its status).
func TestFailRequestLogs(t *testing.T) {
	cases := []struct {
		name      string
		err       error
		cancelled bool
		want      string // "" when nothing is logged
	}{
		{"internal", errors.New("disk on fire"), false, `"level":"ERROR","msg":"request failed","request_id":"req-1"`},
		{"client gone", errors.New("context canceled"), true, `"level":"INFO","msg":"request ended by the client","request_id":"req-1"`},
		{"not found", errkind.New(errkind.NotFound, errors.New("no such project")), false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			ctx, cancel := context.WithCancel(context.Background())
			if c.cancelled {
				cancel()
			}
			defer cancel()
			r := httptest.NewRequestWithContext(ctx, "GET", "/v1/workspace/storage", nil)
			w := httptest.NewRecorder()
			w.Header().Set("X-Request-Id", "req-1")
			failing := func(http.ResponseWriter, *http.Request) error { return c.err }
			answered(slog.New(slog.NewJSONHandler(&logs, nil)), failing)(w, r)
			got := logs.String()
			if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("logged %q, want %q", got, c.want)
			}
			if w.Code < 400 || w.Header().Get("Content-Type") != ProblemType {
				t.Errorf("answered %d %s, want a problem", w.Code, w.Header().Get("Content-Type"))
			}
		})
	}
	// A handler that answered and returned nil is left as it answered.
	w := httptest.NewRecorder()
	answered(nil, func(w http.ResponseWriter, _ *http.Request) error { w.WriteHeader(http.StatusNoContent); return nil })(w, httptest.NewRequest("GET", "/", nil))
	if w.Code != http.StatusNoContent || w.Body.Len() != 0 {
		t.Errorf("a handler's own answer became %d %q", w.Code, w.Body)
	}
}
