// Package errkind is the one classification of the library's errors: bad
// input, not found, conflict, not ready, denied by quota, internal. Every
// shell derives its answer from it — the CLI its exit code, the HTTP server
// its status — so that the two can never disagree about what a failure was.
//
// It owns the kinds and their two mappings, and the hint that travels beside
// a message for the operator, as data (the inputs and operations it names)
// that each shell words. It must never import a package of xfsq but quota
// (a leaf), so that every library package may use it; it never formats for
// a terminal, names a CLI flag or command, or an HTTP route.
package errkind

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/xfsq/xfsq/quota"
)

// Kind is what went wrong, as a caller must react to it.
type Kind int

const (
	// Internal is everything not classified: a failed syscall, a store that
	// does not answer. The caller can only report it.
	Internal Kind = iota
	// Input is a request that can never succeed as given: a bad name, size,
	// path, area or value. The message names the field and the rule.
	Input
	// NotFound is a project, tree, lease or setting that does not exist.
	NotFound
	// Conflict is a request that collides with the state: a name taken, a
	// sweep or lease held by another operation.
	Conflict
	// NotReady is a root, store or project not (yet, or no longer) in a
	// state to serve the request: uninitialised, half-added, half-removed.
	NotReady
	// Denied is a write or run refused by a quota limit.
	Denied
	// TooLarge is a body or file over a configured bound (max_file_bytes,
	// a request body limit): not a quota, the same request can never pass.
	TooLarge
	// Unprocessable is a request, well formed, that names something the
	// state no longer lets it act on, and never will: a saved sweep plan
	// for another root or project, older than plan_max_age, made under
	// other settings, already applied. Unlike a Conflict, retrying cannot
	// help; the fix is to make the request again (a new plan), so the CLI
	// exits 2 as for bad input and the server answers 422.
	Unprocessable
)

var names = [...]string{Internal: "internal", Input: "input", NotFound: "not found", Conflict: "conflict", NotReady: "not ready", Denied: "denied", TooLarge: "too large", Unprocessable: "unprocessable"}

func (k Kind) String() string {
	if k < 0 || int(k) >= len(names) {
		return "internal"
	}
	return names[k]
}

// Exit codes of the CLI, as docs/commands.md gives them. A not-found,
// conflict or not-ready failure is an operation that failed (1), as it has
// always been: scripts test for 2 and 3 only.
const (
	ExitOK     = 0
	ExitFailed = 1
	ExitUsage  = 2
	ExitDenied = 3
)

// ExitCode is the CLI's exit status for a failure of kind k.
func (k Kind) ExitCode() int {
	switch k {
	case Input, Unprocessable:
		return ExitUsage
	case Denied, TooLarge:
		// A write over max_file_bytes (the CLI's only TooLarge) is refused
		// as a quota refuses: scripts test for 3.
		return ExitDenied
	}
	return ExitFailed
}

// HTTPStatus is the server's status for a failure of kind k (docs/api.md, problem types): 507
// is "insufficient storage", the status of a quota that refused.
func (k Kind) HTTPStatus() int {
	switch k {
	case Input:
		return http.StatusBadRequest
	case NotFound:
		return http.StatusNotFound
	case Conflict:
		return http.StatusConflict
	case NotReady:
		return http.StatusServiceUnavailable
	case Denied:
		return http.StatusInsufficientStorage
	case TooLarge:
		return http.StatusRequestEntityTooLarge
	case Unprocessable:
		return http.StatusUnprocessableEntity
	}
	return http.StatusInternalServerError
}

// TypeURI is the stable RFC 9457 problem type of kind k: clients branch on
// it, never on a message's text.
func (k Kind) TypeURI() string {
	return "https://xfsq.dev/problems/" + strings.ReplaceAll(k.String(), " ", "-")
}

// Kinded is implemented by errors that know their kind.
type Kinded interface {
	error
	Kind() Kind
}

// Unreachable is implemented by the errors of a part that cannot be
// reached now, by packages that may not import errkind (the store's
// UnreachableError: a database that refused, or did not answer within the
// call's budget). Of classifies them NotReady: the server answers 503
// with the error's message (which names the cause), never 500.
type Unreachable interface {
	error
	Unreachable() bool
}

// Hinted is implemented by errors that carry what the operator should do.
type Hinted interface {
	error
	Hint() Hint
}

// Of classifies err: the kind of the outermost error in its chain that
// knows one (so a wrapper may reclassify what it wraps), else NotReady for
// an Unreachable part, else Denied for a
// quota refusal (TooLarge for one by max_file_bytes), else Internal. Of(nil) is Internal too: ask only of a
// failure.
func Of(err error) Kind {
	for e := err; e != nil; {
		if k, ok := e.(Kinded); ok {
			return k.Kind()
		}
		if le, ok := e.(*quota.LimitError); ok {
			// A file over max_file_bytes is no quota: freeing space
			// never lets the same write pass.
			if le.Limit == quota.LimitMaxFileBytes {
				return TooLarge
			}
			return Denied
		}
		if u, ok := e.(Unreachable); ok && u.Unreachable() {
			return NotReady
		}
		if errors.Is(e, context.Canceled) || errors.Is(e, context.DeadlineExceeded) {
			// A store that did not answer within the call's budget
			// wraps the deadline it ran out of.
			if u := Unreachable(nil); errors.As(e, &u) && u.Unreachable() {
				return NotReady
			}
			return Internal
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			e = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, w := range u.Unwrap() {
				if k := Of(w); k != Internal {
					return k
				}
			}
			return Internal
		default:
			e = nil
		}
	}
	return Internal
}

// HintOf is the hint of the outermost error in err's chain that carries
// one, in Neutral words, and "" when none does. A quota.UnsupportedError's
// Fix is its hint.
func HintOf(err error) string { return HintIn(err, Neutral) }

// FixOf is the hint of the outermost error in err's chain that carries
// one, as data, for a caller that rewraps err to keep it.
func FixOf(err error) Hint {
	var h Hinted
	if errors.As(err, &h) {
		return h.Hint()
	}
	return Hint{}
}

// HintIn is err's hint in a shell's words: the CLI's flags and commands,
// say, for the fields and actions it names.
func HintIn(err error, w Words) string {
	var h Hinted
	if errors.As(err, &h) {
		return h.Hint().In(w)
	}
	var un *quota.UnsupportedError
	if errors.As(err, &un) {
		return un.Fix
	}
	return ""
}

// Fielded is implemented by input errors that name the field at fault, by
// the library's name for it (e.g. "depth", "bytes_hard"). The message
// starts with that name, so that a shell may put its own (a CLI flag, a
// JSON member) in its place.
type Fielded interface {
	error
	Field() string
}

// FieldOf is the field the outermost Fielded error in err's chain names.
func FieldOf(err error) string {
	var f Fielded
	if errors.As(err, &f) {
		return f.Field()
	}
	return ""
}

// Error is a message of a kind, with an optional hint beside it.
type Error struct {
	K   Kind
	Err error
	// Fix says what the operator should do; it is not part of Error().
	Fix Hint
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }
func (e *Error) Kind() Kind    { return e.K }
func (e *Error) Hint() Hint    { return e.Fix }

// New classifies err as k (nil stays nil).
func New(k Kind, err error) error {
	if err == nil {
		return nil
	}
	return &Error{K: k, Err: err}
}

// WithHint classifies err as k and says what to do about it, in a
// sentence that names no input or operation.
func WithHint(k Kind, err error, fix string) error { return WithFix(k, err, Fix(fix)) }

// WithFieldHint is WithHint for a hint that names inputs: fix has one %s
// for each of fields, which each shell words its own way (HintIn).
func WithFieldHint(k Kind, err error, fix string, fields ...string) error {
	refs := make([]Ref, len(fields))
	for i, f := range fields {
		refs[i] = Field(f)
	}
	return WithFix(k, err, Fix(fix, refs...))
}

// WithFix classifies err as k with the hint h, which may name inputs and
// operations.
func WithFix(k Kind, err error, h Hint) error {
	if err == nil {
		return nil
	}
	return &Error{K: k, Err: err, Fix: h}
}

// sentinel is a comparable error that knows its kind, for errors.Is.
type sentinel struct {
	k   Kind
	msg string
}

func (s *sentinel) Error() string { return s.msg }
func (s *sentinel) Kind() Kind    { return s.k }

// Sentinel is an error value of kind k for errors.Is, e.g. ErrNotFound.
func Sentinel(k Kind, msg string) error { return &sentinel{k, msg} }
