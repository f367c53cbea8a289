package core

import (
	"fmt"

	"github.com/xfsq/xfsq/errkind"
)

// Kind makes bad input a 2 in the CLI and a 400 in the server.
func (e *InputError) Kind() errkind.Kind { return errkind.Input }

// Field is the field at fault (InputError.Param), for a shell to name in
// its own terms; "" when the input as a whole is.
func (e *InputError) Field() string { return e.Param }

// fieldErrorf is bad input in one field: the message starts with its name.
func fieldErrorf(field, format string, args ...any) error {
	return &InputError{Msg: field + " " + fmt.Sprintf(format, args...), Param: field}
}

// notReady is a project half-added or half-removed: a 503 to the server,
// since the operation may succeed once doctor (or the other process) is done.
func notReady(name, state string, fix errkind.Hint) error {
	return errkind.WithFix(errkind.NotReady, fmt.Errorf("project %q is %s, not ready", name, state), fix)
}
