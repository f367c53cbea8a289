package project

import "github.com/xfsq/xfsq/errkind"

// Kind makes bad input a 2 in the CLI and a 400 in the server.
func (e *InputError) Kind() errkind.Kind { return errkind.Input }
