package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/errkind"
)

// Every operation a hint may ask for is a route of the server's table, or
// one the API does not offer and words as run on the host.
func TestEveryHintedOpIsWorded(t *testing.T) {
	routes := newTestServerRoutes(t)
	for _, op := range errkind.Ops {
		route, ok := opRoutes[op]
		if !ok {
			if !hostOnly[op] {
				t.Errorf("op %s is worded neither as a route nor as host-only", op)
			}
			continue
		}
		if !routes[route] {
			t.Errorf("op %s is worded as %q, which is no route of the server", op, route)
		}
	}
}

// A problem's fix names JSON members and requests, never a CLI flag or
// command.
func TestProblemFixSpeaksAPI(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{errkind.WithFieldHint(errkind.Input, errors.New("nothing to change: no limit given"),
			"give at least one of %s, %s", "bytes_soft", "bytes_hard"), "give at least one of bytes_soft, bytes_hard"},
		{errkind.WithFix(errkind.Conflict, errors.New("exists"), errkind.Fix("see %s", errkind.Do(errkind.OpProjectShow, "omni"))),
			"see GET /v1/workspace/storage/projects/omni"},
		{errkind.WithFix(errkind.Input, errors.New("a directory"), errkind.Fix("ask for %s", errkind.Do(errkind.OpFilesRemove, "", "recursive", ""))),
			"ask for DELETE /v1/workspace/storage/projects/{id}/files/{path...}?recursive=true"},
		{errkind.WithFix(errkind.Unprocessable, errors.New("stale"), errkind.Fix("make %s", errkind.Do(errkind.OpSweep, "_root", "areas", "inbound", "dry_run", "", "plan_out", "FILE"))),
			`make POST /v1/workspace/storage/projects/_root/sweep {"areas": ["inbound"], "dry_run": true}`},
		{errkind.WithFix(errkind.NotReady, errors.New("half added"), errkind.Fix("run %s", errkind.Do(errkind.OpDoctor, "", "fix", ""))),
			"run on the host: doctor (fix)"},
	} {
		p := ProblemOf(c.err)
		if p.Fix != c.want {
			t.Errorf("%v: fix %q, want %q", c.err, p.Fix, c.want)
		}
		if strings.Contains(p.Fix, "--") || strings.Contains(p.Fix, "xfsq ") {
			t.Errorf("%v: fix %q speaks CLI", c.err, p.Fix)
		}
	}
}

// newTestServerRoutes is the server's own route table, as "METHOD pattern".
func newTestServerRoutes(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, rt := range (&Server{}).coreRoutes() {
		out[rt.Method+" "+rt.Pattern] = true
	}
	return out
}
