package healthsources

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/store"
)

// NotReadyError names the part of a root that cannot serve (Ready). Its
// message is the part and what is wrong, never the cause's text (a
// driver's error may name hosts and users, and readiness is asked by
// anonymous probes); Unwrap gives the cause for the server's log.
type NotReadyError struct {
	Part, Msg string
	Fix       errkind.Hint
	Cause     error
}

func (e *NotReadyError) Error() string      { return e.Part + ": " + e.Msg }
func (e *NotReadyError) Unwrap() error      { return e.Cause }
func (e *NotReadyError) Kind() errkind.Kind { return errkind.NotReady }
func (e *NotReadyError) Hint() errkind.Hint { return e.Fix }

// Readiness is what a server's readiness asks of an open root: its
// directory, its quota backend (nil: none was detected) and whether that
// is the kernel's on XFS, and its store.
type Readiness struct {
	Root    string
	Backend quota.Backend
	XFS     bool
	Store   *store.Store
}

// Ready says whether an open root can serve requests now (a server's
// readiness): the root is still there with its .xfsq/ (an unmounted root
// shows the empty directory beneath it), its filesystem is still the kind
// the backend was opened for, and the store answers within timeout.
func Ready(ctx context.Context, r Readiness, timeout time.Duration) error {
	if err := core.CheckRoot(r.Root); err != nil {
		return &NotReadyError{Part: "root", Msg: "the sandbox root has no " + core.StateDir + "/ (unmounted?)", Fix: errkind.Fix("mount the sandbox root again, or run %s", errkind.Do(errkind.OpInit, "")), Cause: err}
	}
	if r.Backend == nil {
		return &NotReadyError{Part: "backend", Msg: "no quota backend was detected"}
	}
	if r.XFS {
		var sfs unix.Statfs_t
		if err := unix.Statfs(r.Root, &sfs); err != nil || sfs.Type != unix.XFS_SUPER_MAGIC {
			return &NotReadyError{Part: "backend", Msg: "the sandbox root is no longer on XFS", Fix: errkind.Fix("mount its XFS filesystem again"), Cause: err}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := r.Store.Ping(ctx); err != nil {
		return storeNotReady(err, timeout)
	}
	return nil
}

// storeNotReady says why the store did not answer: refused, silent past
// the budget (a blackholed link), or failing otherwise; never where the
// database is (readiness is asked anonymously).
func storeNotReady(err error, timeout time.Duration) *NotReadyError {
	e := &NotReadyError{Part: "store", Msg: fmt.Sprintf("does not answer within %s", timeout), Fix: errkind.Fix("check that the database (%s) is up and reachable", errkind.Field("db")), Cause: err}
	var u *store.UnreachableError
	switch {
	case errors.As(err, &u):
		e.Msg, e.Fix = "unreachable: "+u.Why, errkind.Fix(u.Hint())
	case !errors.Is(err, context.DeadlineExceeded):
		e.Msg = "fails to answer (the server's log says why)"
	}
	return e
}
