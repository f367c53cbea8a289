package errkind

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/quota"
)

// TestTable is the contract both shells rely on: docs/commands.md's exit codes and
// docs/api.md's statuses, one row per kind.
func TestTable(t *testing.T) {
	for _, c := range []struct {
		k          Kind
		name       string
		exit, http int
	}{
		{Internal, "internal", 1, http.StatusInternalServerError},
		{Input, "input", 2, http.StatusBadRequest},
		{NotFound, "not found", 1, http.StatusNotFound},
		{Conflict, "conflict", 1, http.StatusConflict},
		{NotReady, "not ready", 1, http.StatusServiceUnavailable},
		{Denied, "denied", 3, http.StatusInsufficientStorage},
		{TooLarge, "too large", 3, http.StatusRequestEntityTooLarge},
		{Unprocessable, "unprocessable", 2, http.StatusUnprocessableEntity},
	} {
		if got := c.k.String(); got != c.name {
			t.Errorf("%d: String %q, want %q", c.k, got, c.name)
		}
		if got := c.k.ExitCode(); got != c.exit {
			t.Errorf("%s: exit %d, want %d", c.k, got, c.exit)
		}
		if got := c.k.HTTPStatus(); got != c.http {
			t.Errorf("%s: HTTP %d, want %d", c.k, got, c.http)
		}
		if got, want := c.k.TypeURI(), "https://xfsq.dev/problems/"+strings.ReplaceAll(c.name, " ", "-"); got != want {
			t.Errorf("%s: type %q, want %q", c.k, got, want)
		}
	}
}

func TestOf(t *testing.T) {
	notFound := Sentinel(NotFound, "not found")
	limit := &quota.LimitError{Tree: `project "a" workspace`, Limit: "bytes_hard", Used: 1, Requested: 2, Max: 2}
	for _, c := range []struct {
		name string
		err  error
		want Kind
	}{
		{"plain", errors.New("boom"), Internal},
		{"nil", nil, Internal},
		{"sentinel wrapped", fmt.Errorf("project %q %w", "a", notFound), NotFound},
		{"quota limit", fmt.Errorf("put: %w", limit), Denied},
		// One file over max_file_bytes: 413 over HTTP, exit 3 as a quota.
		{"max_file_bytes", fmt.Errorf("put: %w", &quota.LimitError{Limit: quota.LimitMaxFileBytes, Requested: 2, Max: 1}), TooLarge},
		{"outermost wins", New(Conflict, fmt.Errorf("x: %w", notFound)), Conflict},
		{"joined", errors.Join(errors.New("a"), New(Input, errors.New("b"))), Input},
		{"cancelled", fmt.Errorf("walk: %w", context.Canceled), Internal},
		// The store's UnreachableError, which it cannot name errkind to
		// classify: 503, not 500, though it wraps a deadline.
		{"store unreachable", fmt.Errorf("list: %w", unreachable{context.DeadlineExceeded}), NotReady},
	} {
		if got := Of(c.err); got != c.want {
			t.Errorf("%s: Of = %s, want %s", c.name, got, c.want)
		}
	}
	if !errors.Is(fmt.Errorf("w: %w", notFound), notFound) {
		t.Error("a sentinel is not found by errors.Is")
	}
}

func TestHint(t *testing.T) {
	err := fmt.Errorf("open: %w", WithHint(NotReady, errors.New("not a sandbox root"), "run xfsq init"))
	if got := HintOf(err); got != "run xfsq init" {
		t.Errorf("HintOf = %q", got)
	}
	if got := err.Error(); got != "open: not a sandbox root" {
		t.Errorf("the hint leaked into the message: %q", got)
	}
	un := &quota.UnsupportedError{Path: "/r", Reason: "ext4", Fix: "use XFS"}
	if got := HintOf(fmt.Errorf("x: %w", un)); got != "use XFS" {
		t.Errorf("HintOf(UnsupportedError) = %q", got)
	}
	if HintOf(errors.New("x")) != "" || New(Input, nil) != nil {
		t.Error("no hint and nil in, nil out")
	}
}

type fieldErr struct{ f string }

func (e fieldErr) Error() string { return e.f + " 9: use 1 to 8" }
func (e fieldErr) Field() string { return e.f }
func (e fieldErr) Kind() Kind    { return Input }

func TestFieldOf(t *testing.T) {
	if got := FieldOf(fmt.Errorf("top: %w", fieldErr{"depth"})); got != "depth" {
		t.Errorf("FieldOf = %q", got)
	}
	if FieldOf(errors.New("x")) != "" {
		t.Error("a field from nowhere")
	}
}

// A hint that names inputs is data: HintOf names them as the library (the
// API's JSON members) does, HintIn as the shell asks (the CLI's flags).
func TestFieldHintIsWordedByEachShell(t *testing.T) {
	err := fmt.Errorf("set: %w", WithFieldHint(Input, errors.New("nothing to change"), "give one of %s, %s", "bytes_soft", "inodes_hard"))
	if got, want := HintOf(err), "give one of bytes_soft, inodes_hard"; got != want {
		t.Errorf("HintOf = %q, want %q", got, want)
	}
	if got, want := HintIn(err, cliLike), "give one of --bytes-soft, --inodes-hard"; got != want {
		t.Errorf("HintIn = %q, want %q", got, want)
	}
	plain := WithHint(Input, errors.New("x"), "run it again")
	if got := HintIn(plain, cliLike); got != "run it again" {
		t.Errorf("HintIn of a hint naming no field = %q", got)
	}
}

// unreachable stands for the store's UnreachableError.
type unreachable struct{ err error }

func (u unreachable) Error() string     { return "store unreachable: " + u.err.Error() }
func (u unreachable) Unwrap() error     { return u.err }
func (u unreachable) Unreachable() bool { return true }

// cliLike words fields as flags and actions as command lines, as a CLI
// would.
var cliLike = Words{
	Field: func(f string) string { return "--" + strings.ReplaceAll(f, "_", "-") },
	Action: func(a Action) string {
		s := "x " + strings.ReplaceAll(string(a.Op), ".", " ")
		if a.Target != "" {
			s += " " + a.Target
		}
		for _, g := range a.Args {
			s += " --" + strings.ReplaceAll(g.Field, "_", "-")
			if g.Value != "" {
				s += " " + g.Value
			}
		}
		return s
	},
}

// An action a hint asks for is data: each shell words it, and one that
// rewraps the error keeps it (FixOf).
func TestActionHintIsWordedByEachShell(t *testing.T) {
	fix := Fix("run %s, or give %s", Do(OpDoctor, "", "fix", ""), Field("bytes_hard"))
	err := fmt.Errorf("add: %w", WithFix(NotReady, errors.New("half added"), fix))
	for _, c := range []struct {
		name string
		w    Words
		want string
	}{
		{"neutral", Neutral, "run doctor (fix), or give bytes_hard"},
		{"a CLI", cliLike, "run x doctor --fix, or give --bytes-hard"},
	} {
		if got := HintIn(err, c.w); got != c.want {
			t.Errorf("%s: HintIn = %q, want %q", c.name, got, c.want)
		}
	}
	if got := HintOf(err); got != "run doctor (fix), or give bytes_hard" {
		t.Errorf("HintOf = %q", got)
	}
	rewrapped := WithFix(Input, errors.New(err.Error()), FixOf(err))
	if got := HintIn(rewrapped, cliLike); got != "run x doctor --fix, or give --bytes-hard" {
		t.Errorf("a rewrapped error lost its hint: %q", got)
	}
	a := Do(OpSweep, "_root", "areas", "inbound", "dry_run", "")
	if got, want := a.String(), "sweep _root (areas=inbound, dry_run)"; got != want {
		t.Errorf("Action.String = %q, want %q", got, want)
	}
	if v, ok := a.Arg("areas"); !ok || v != "inbound" {
		t.Errorf("Arg(areas) = %q %v", v, ok)
	}
	then := Fix("see %s", Do(OpEvents, "", "type", "settings.changed")).Then(Fix("make %s", Do(OpSweep, "")))
	if got, want := then.In(cliLike), "see x events --type settings.changed; make x sweep"; got != want {
		t.Errorf("Then = %q, want %q", got, want)
	}
	if b, _ := fix.MarshalJSON(); string(b) != `"run doctor (fix), or give bytes_hard"` {
		t.Errorf("a hint in JSON is %s, want its neutral words", b)
	}
}
