package core

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/prometheus/procfs"
)

// An operation (an add, a removal, a sweep, a doctor pass, a write) is what
// holds records of work in progress: a project row being added, a sweep
// lock, a pending deletion, a reservation. Its holder is
// pid.start@host/op-N. Naming the operation, not only the process, is what
// lets a long-lived process (the server) tell its own goroutines apart: two
// sweeps of one project in one process conflict as they would across
// processes, and one goroutine never settles another's deletion in flight.
// Liveness of a holder of this process is the registry below; of another
// process, whether that process runs.

// ops is this process's live operations, by op ID.
var (
	ops    sync.Map
	lastOp atomic.Uint64
)

type opKey struct{}

// BeginOp starts an operation and returns a context carrying it, and the
// function that ends it. Inside an operation it starts none: the work is
// part of the caller's (a doctor --fix that finishes a removal is one
// operation). After end, the operation's leftovers are those of a holder
// that is gone: the next add, sweep or doctor of any goroutine may clear
// them.
func BeginOp(ctx context.Context) (context.Context, func()) {
	if _, ok := ctx.Value(opKey{}).(string); ok {
		return ctx, func() {}
	}
	id := "op-" + strconv.FormatUint(lastOp.Add(1), 10)
	ops.Store(id, struct{}{})
	return context.WithValue(ctx, opKey{}, processHolder()+"/"+id), func() { ops.Delete(id) }
}

// HolderOf names the operation of ctx (see BeginOp). A context without one
// gets this process's name alone, which stays alive as long as the process
// runs: never taken for gone too early, at the price of waiting for a
// restart to be cleared.
func HolderOf(ctx context.Context) string {
	if h, ok := ctx.Value(opKey{}).(string); ok {
		return h
	}
	return processHolder()
}

// processHolder names this process as pid.start@host. start is the
// process's start time (clock ticks after boot), so that a later process
// given the same pid is not taken for this one.
var processHolder = sync.OnceValue(func() string {
	h, _ := os.Hostname()
	id := strconv.Itoa(os.Getpid())
	if start, err := startTime(os.Getpid()); err == nil {
		id += "." + strconv.FormatUint(start, 10)
	}
	return id + "@" + h
})

func startTime(pid int) (uint64, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.Stat()
	return st.Starttime, err
}

// holderAlive reports whether the operation named by a holder may still be
// under way. One of this process is alive while it is registered; one of
// another process (or written before holders named operations) while that
// process runs. A holder on another host is taken as alive: only that host
// can tell. When in doubt (the start time cannot be read) it says alive: a
// live holder taken for dead would have its work settled under it.
func holderAlive(h string) bool {
	proc, op, hasOp := strings.Cut(h, "/")
	if hasOp && proc == processHolder() {
		_, live := ops.Load(op)
		return live
	}
	if !onThisHostname(proc) {
		return proc != ""
	}
	return processRuns(proc)
}

// onThisHostname reports whether a holder's process (pid.start@host) names
// this machine's hostname.
func onThisHostname(proc string) bool {
	_, host, _ := strings.Cut(proc, "@")
	me, _ := os.Hostname()
	return host == me
}

// processRuns asks this kernel whether the process pid.start@host runs.
// When in doubt (the start time cannot be read) it says it does.
func processRuns(proc string) bool {
	id, _, _ := strings.Cut(proc, "@")
	pidStr, startStr, hasStart := strings.Cut(id, ".") // "pid" alone: written before start times
	pid, err := strconv.Atoi(pidStr)
	if err != nil || pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if hasStart {
		if start, err := startTime(pid); err == nil {
			return strconv.FormatUint(start, 10) == startStr
		}
	}
	return true
}
