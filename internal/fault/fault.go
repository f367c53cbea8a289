// Package fault lets tests kill a process at a named point, to show that an
// interrupted operation leaves nothing half-done behind.
//
// It must never do anything unless XFSQ_FAULT names the point exactly.
package fault

import (
	"os"
	"syscall"
)

// Env names the variable that selects the point to die at.
const Env = "XFSQ_FAULT"

// Point kills this process with SIGKILL — no deferred cleanup, as in a power
// cut or an OOM kill — when XFSQ_FAULT equals name.
func Point(name string) {
	if os.Getenv(Env) == name {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is delivered asynchronously
	}
}
