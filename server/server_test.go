package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
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
