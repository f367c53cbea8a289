package base

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// UnreachableError is a PostgreSQL store this process cannot reach now:
// it refused the connection, did not answer within the call's budget
// (packets dropped: a blackholed link), has no route, or cut the
// connection. It never quotes the DSN: Addr is host:port only.
//
// Its Unreachable method is how errkind tells it apart (the store may not
// import errkind): a shell answers 503, not 500, and a command fails as
// not ready, with Hint's advice.
type UnreachableError struct {
	Addr string
	// Refused: the host answered that nothing listens (ECONNREFUSED), as
	// opposed to a silence (TimedOut) or a route or link that failed.
	Refused, TimedOut bool
	// Why says what happened, in words that follow the address.
	Why string
	Err error
}

func (e *UnreachableError) Error() string {
	return "store unreachable: the database at " + e.Addr + " " + e.Why
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// Unreachable marks the error for errkind.Of (NotReady: 503).
func (e *UnreachableError) Unreachable() bool { return true }

// Hint says what the operator can do.
func (e *UnreachableError) Hint() string {
	if e.Refused {
		return "start PostgreSQL, or check the host and port in the database's DSN"
	}
	return "check the network between this host and PostgreSQL (firewall, route, the server's load); the bounds are the DSN's connect_timeout and statement_timeout"
}

// AsUnreachable is err as an UnreachableError when it says that the server
// at addr could not be reached, and nil when it is something else (an SQL
// error, a cancelled request). cut says the call's budget ran out (budget
// long) and its connection was cut for it.
func AsUnreachable(err error, addr string, cut bool, budget time.Duration) *UnreachableError {
	if err == nil {
		return nil
	}
	var u *UnreachableError
	if errors.As(err, &u) {
		return u
	}
	e := &UnreachableError{Addr: addr, Err: err}
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Refused, e.Why = true, "refused the connection (nothing listens there)"
	case cut || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.ETIMEDOUT) || (errors.As(err, &ne) && ne.Timeout()):
		e.TimedOut, e.Why = true, fmt.Sprintf("did not answer within %s", budget.Round(100*time.Millisecond))
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		e.Why = "cannot be reached (no route to it)"
	case errors.As(err, &dns):
		e.Why = "cannot be found: its host name does not resolve"
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		e.Why = "closed the connection"
	default:
		return nil
	}
	return e
}
