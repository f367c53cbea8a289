package inventory

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Background lowers this process to idle I/O priority and nice 10, so a
// scheduled walk yields to the sandboxes' own work. Both are per-thread in
// Linux: every current thread is changed, and threads the Go runtime makes
// later inherit from them.
func Background() error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	const (
		ioprioWhoProcess = 1
		ioprioClassIdle  = 3
		ioprioClassShift = 13
	)
	var first error
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if _, _, errno := unix.Syscall(unix.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(tid), ioprioClassIdle<<ioprioClassShift); errno != 0 && first == nil {
			first = errno
		}
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, 10); err != nil && first == nil {
			first = err
		}
	}
	return first
}
