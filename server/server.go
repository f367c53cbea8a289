// Package server is the HTTP shell of xfsq (`xfsq serve`, docs/api.md): a JSON
// API, the dashboard and the metrics endpoint over one long-lived
// sandbox.Root. Each handler is decode → one library call → encode; the
// library decides, the server only translates.
//
// It owns the HTTP surface: routing, bearer tokens and roles, request
// bounds, and the translation of library errors into RFC 9457 problems
// (status from errkind, never from message text). It must never reach the
// store or the kernel backend itself (internal/layering's test holds that),
// never walk or write on a GET unless the request asks (?refresh=1), never
// journal under any actor but the token's name (project.WithActor), and
// never log, echo or journal a token.
//
// The contract every handler keeps (api.go): the auth middleware has put
// the Caller in the request's context and the caller's actor name in
// project.WithActor, and has answered 404 already for a {id} the caller may
// not see; a handler reads r.PathValue("id") / r.PathValue("path"), decodes
// with decodeJSON, makes one library call with r.Context(), and answers
// with writeJSON, or returns the error: a handlerFunc, which answered
// writes as a problem, logging what the client is not told. Lists
// (overview, events) filter with Caller.Sees themselves.
//
// Every route is one row of the route table (routes.go: Route{Method,
// Pattern, Role, Handler}; Server.coreRoutes, plus Config.Routes), and the
// middleware (Server.guard) runs for each: request id, access log, the
// Host check (421 for a name the server does not answer: hosts.go), token,
// role, a limited reader's 404 and the actor, and after the handler the
// drain of a body it left unread (drain.go). A handler of this package is
// a method of *Server, with s.root / s.m (the open root and its manager)
// and s.log.
package server

import (
	"encoding/json"
	"errors"
	"net/http"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/errkind"
)

// ProblemType is the media type of every error body.
const ProblemType = apiv1.ProblemType

// Problem is an RFC 9457 problem detail, plus the operator's hint: the
// wire's (apiv1.Problem), which the client returns as its error.
type Problem = apiv1.Problem

// ProblemOf translates a library error. The status is the error's kind's
// (errkind.Kind.HTTPStatus), so the server and the CLI's exit codes agree;
// an internal error's detail is withheld from the client, who can do
// nothing with a syscall's errno, and is for the server's log.
func ProblemOf(err error) Problem {
	if err == nil {
		err = errors.New("no error")
	}
	var mt *mediaTypeError
	if errors.As(err, &mt) {
		return Problem{Type: TypeUnsupportedMediaType, Title: http.StatusText(http.StatusUnsupportedMediaType),
			Status: http.StatusUnsupportedMediaType, Detail: err.Error(), Fix: "send the body as application/json"}
	}
	k := errkind.Of(err)
	p := Problem{Type: k.TypeURI(), Status: k.HTTPStatus(), Title: http.StatusText(k.HTTPStatus()), Detail: err.Error(), Fix: errkind.HintIn(err, apiWords)}
	if k == errkind.Internal {
		p.Detail, p.Fix = "the operation failed; the server's log says why", ""
	}
	return p
}

// WriteProblem answers a request with err as a problem.
func WriteProblem(w http.ResponseWriter, err error) {
	p := ProblemOf(err)
	w.Header().Set("Content-Type", ProblemType)
	w.WriteHeader(p.Status)
	json.NewEncoder(w).Encode(p)
}
