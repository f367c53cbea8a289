package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/xfsq/xfsq/errkind"
)

// Role is what a token may do. The zero Role is an anonymous caller, who
// reaches only /healthz, /readyz, /metrics and /v1/openapi.json.
type Role int

const (
	RoleNone Role = iota
	RoleReader
	RoleOperator
)

func (r Role) String() string {
	switch r {
	case RoleReader:
		return "reader"
	case RoleOperator:
		return "operator"
	}
	return "none"
}

// Caller is who a request comes from, as its token says. Name is the
// token's name (the journal's actor), never the token.
type Caller struct {
	Name string
	Role Role
	// Projects limits a reader to these projects; nil: every project.
	Projects []string
}

// Sees says whether the caller may know that project exists. A limited
// reader gets 404 for the others, so that names do not leak.
func (c Caller) Sees(project string) bool {
	return c.Projects == nil || slices.Contains(c.Projects, project)
}

// Tokens says who a bearer token belongs to. The server only asks; the
// token file that answers is read and reloaded beside it (package daemon).
type Tokens interface {
	Lookup(bearer string) (Caller, bool)
}

type callerKey struct{}

func withCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerOf is the request's caller (RoleNone when unauthenticated).
func CallerOf(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// TypeUnsupportedMediaType is the problem type of a JSON body sent as
// another media type (415).
const TypeUnsupportedMediaType = "https://xfsq.dev/problems/unsupported-media-type"

// mediaTypeError refuses a body of a media type the endpoint does not read:
// an HTTP matter, so no kind of the library's.
type mediaTypeError struct{ given string }

func unsupportedMediaType(given string) error { return &mediaTypeError{given} }

// Kind: the client's mistake, not the server's (never logged as a failure).
func (e *mediaTypeError) Kind() errkind.Kind { return errkind.Input }

func (e *mediaTypeError) Error() string {
	return fmt.Sprintf("Content-Type %q: this endpoint reads application/json", e.given)
}

// bodiless refuses a request body to an operation whose options are
// query parameters (a removal, a release, a reset, doctor's repair):
// ignoring it would do for real what a body such as {"dry_run": true}
// asked not to, as POST .../sweep takes that body. Only whitespace, at
// most maxJSONBody of it, counts as no body.
func bodiless(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if r.Body != nil && r.Body != http.NoBody {
			b, err := io.ReadAll(io.LimitReader(r.Body, maxJSONBody+1))
			if err != nil {
				return errkind.New(errkind.Input, fmt.Errorf("reading the request body: %w", err))
			}
			if len(b) > maxJSONBody || len(bytes.TrimSpace(b)) > 0 {
				return errkind.New(errkind.Input, fmt.Errorf("%s takes no request body: its options, if any, go in the query string", r.Pattern))
			}
		}
		return h(w, r)
	}
}

// maxJSONBody bounds every JSON request body: the API's bodies are small
// (limits, a plan id), and a client that sends more is refused, not read.
const maxJSONBody = 1 << 20

// decodeJSON reads one JSON object into v, refusing unknown fields, a
// body over maxJSONBody and trailing data, with an error naming the field
// that was wrong (errkind.Input, 400; errkind.TooLarge, 413). An empty
// body is an empty object.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return unsupportedMediaType(ct)
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxJSONBody)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err == nil && dec.More() {
		err = errors.New("trailing data after the JSON object")
	}
	if err == nil {
		return nil
	}
	var tooBig *http.MaxBytesError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooBig):
		return errkind.New(errkind.TooLarge, fmt.Errorf("request body over %d bytes", maxJSONBody))
	case errors.As(err, &typeErr):
		return errkind.New(errkind.Input, fmt.Errorf("field %q: want %s, got JSON %s", typeErr.Field, typeErr.Type, typeErr.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return errkind.New(errkind.Input, fmt.Errorf("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field ")))
	}
	return errkind.New(errkind.Input, fmt.Errorf("request body is not a JSON object: %v", err))
}
