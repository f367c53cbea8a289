//go:build xfsqfault

package fault

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Armed reports whether Point can kill: built with Tag.
const Armed = true

var hits atomic.Int64

// Point kills this process with SIGKILL — no deferred cleanup, as in a power
// cut or an OOM kill — when XFSQ_FAULT equals name, or, for "name#N", on
// the Nth time the point is reached; with XFSQ_FAULT_ACTION=stop it stops
// the process there instead (see ActionEnv).
func Point(name string) {
	want := os.Getenv(Env)
	if want == "" {
		return
	}
	at, nth, _ := strings.Cut(want, "#")
	if at != name {
		return
	}
	if n, err := strconv.Atoi(nth); err == nil && hits.Add(1) != int64(n) {
		return
	}
	if os.Getenv(ActionEnv) == "stop" {
		// Paused here until the test kills it (or continues it). The stop
		// is sent to this thread: sent to the process, the kernel may hand
		// it to another thread and this one run on past the point for a
		// moment (long enough for an unlink) before the group stops.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		unix.Tgkill(os.Getpid(), unix.Gettid(), unix.SIGSTOP)
		return
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is delivered asynchronously
}
