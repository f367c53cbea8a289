package cliargs

import (
	"fmt"

	"github.com/xfsq/xfsq/errkind"
)

// UsageError is bad usage or input: exit 2.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

// Kind: the CLI's own usage errors are bad input, as the library's are.
func (e *UsageError) Kind() errkind.Kind { return errkind.Input }

// Usagef is a usage error worded as fmt.Sprintf words it.
func Usagef(format string, args ...any) error { return &UsageError{fmt.Sprintf(format, args...)} }

// ExitError carries an exit code for an outcome already printed.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit %d", e.Code) }

// JSONRequested looks for --json before urfave has parsed anything, so that
// even a parse error is reported as JSON.
func JSONRequested(args []string) bool {
	for _, a := range args[1:] {
		if a == "--json" || a == "-json" || a == "--json=true" {
			return true
		}
		if a == "--" {
			return false
		}
	}
	return false
}
