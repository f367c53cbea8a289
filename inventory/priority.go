package inventory

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// Background priority is per thread, never per process: idle I/O class
// and nice 10 make a walk or a sweep yield to the sandboxes' own work, and
// a long-lived process (the server) must keep them off the threads that
// serve its requests and commit its transactions. On Linux ioprio_set with
// IOPRIO_WHO_PROCESS and setpriority(PRIO_PROCESS) given a thread ID act on
// that one thread.

// Background runs fn at background priority on an OS thread of its own
// and returns when fn does. The error says why the priority could not be
// lowered; fn runs either way (a walk at normal priority is still a walk).
// Goroutines fn starts run at normal priority unless they call
// LowerThread themselves (the walkers' workers do, given
// Options.Background).
func Background(fn func()) error {
	errc := make(chan error, 1)
	go func() {
		err := LowerThread()
		defer func() { errc <- err }()
		fn()
	}()
	return <-errc
}

// LowerThread locks the calling goroutine to its OS thread for good and
// lowers that thread to idle I/O class and nice 10. The goroutine never
// unlocks it: when the goroutine ends the runtime ends the thread, so the
// lowered priority can never be handed to other goroutines (the main
// thread, which the runtime never ends, is wedged instead: nothing runs
// on it again). The runtime
// makes new threads from an unlocked template thread, so none inherits it
// either.
func LowerThread() error {
	runtime.LockOSThread()
	tid := unix.Gettid()
	var first error
	if _, _, errno := unix.Syscall(unix.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(tid), ioprioClassIdle<<ioprioClassShift); errno != 0 {
		first = errno
	}
	if err := unix.Setpriority(unix.PRIO_PROCESS, tid, 10); err != nil && first == nil {
		first = err
	}
	return first
}

const (
	ioprioWhoProcess = 1
	ioprioClassIdle  = 3
	ioprioClassShift = 13
)
