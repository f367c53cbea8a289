// Package threadtest is test support for background priority: a thread's
// I/O class and nice value as the kernel has them (Priority), and which of the
// process's threads still run at another nice value than the callers'.
// It is never imported by a library or a shell.
package threadtest

import (
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Lingering waits up to within for every thread of the process but the
// main one to be back at nice, and returns those that are not. The main
// thread is left out: the runtime never ends it, but wedges it when a
// goroutine locked to it ends, so nothing runs on it again at the priority
// it was left with. Threads a background pass lowered end with their
// goroutines, so a non-empty answer is a pass that leaked its priority.
func Lingering(nice int, within time.Duration) []int {
	var lowered []int
	for deadline := time.Now().Add(within); ; time.Sleep(10 * time.Millisecond) {
		lowered = lowered[:0]
		tasks, _ := os.ReadDir("/proc/self/task")
		for _, task := range tasks {
			tid, _ := strconv.Atoi(task.Name())
			if tid == os.Getpid() {
				continue
			}
			if p, err := unix.Getpriority(unix.PRIO_PROCESS, tid); err == nil && 20-p != nice {
				lowered = append(lowered, tid)
			}
		}
		if len(lowered) == 0 || time.Now().After(deadline) {
			return lowered
		}
	}
}

// Priority is the calling thread's I/O scheduling class (3: idle) and nice
// value, read from the kernel as a test checks what a background pass set.
func Priority(t testing.TB) (class, nice int) {
	t.Helper()
	tid := unix.Gettid()
	const whoProcess, classShift = 1, 13 // IOPRIO_WHO_PROCESS, IOPRIO_CLASS_SHIFT
	prio, _, errno := unix.Syscall(unix.SYS_IOPRIO_GET, whoProcess, uintptr(tid), 0)
	if errno != 0 {
		t.Fatalf("ioprio_get: %v", errno)
	}
	p, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	if err != nil {
		t.Fatalf("getpriority: %v", err)
	}
	return int(prio >> classShift), 20 - p // getpriority answers 20 - nice
}
