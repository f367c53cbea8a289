//go:build xfsqfault

package fault

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
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
		// Paused here until the test kills it (or continues it).
		syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		return
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is delivered asynchronously
}
