package inventory

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestBackground(t *testing.T) {
	if os.Getenv("XFSQ_TEST_BACKGROUND") == "" {
		// In a child: the priority change must not leak into other tests.
		cmd := exec.Command(os.Args[0], "-test.run=^TestBackground$")
		cmd.Env = append(os.Environ(), "XFSQ_TEST_BACKGROUND=1")
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS") {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	if err := Background(); err != nil {
		t.Fatal(err)
	}
	const ioprioWhoProcess, idle = 1, 3
	prio, _, errno := unix.Syscall(unix.SYS_IOPRIO_GET, ioprioWhoProcess, uintptr(unix.Gettid()), 0)
	if errno != 0 || prio>>13 != idle {
		t.Errorf("I/O priority class %d (%v), want idle (3)", prio>>13, errno)
	}
	// getpriority returns 20 - nice.
	if p, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid()); err != nil || 20-p != 10 {
		t.Errorf("nice %d (%v), want 10", 20-p, err)
	}
}
