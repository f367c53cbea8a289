package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Where no kernel with XFS quotas can be booted, the demo still runs its
// tour on the fallback backend and says why in a line or two, never with a
// kernel's stack dump.
func TestDemoFallsBackSayingWhy(t *testing.T) {
	if _, err := os.Stat("/proc/fs/xfs/xqm"); err == nil && os.Geteuid() == 0 {
		t.Log("this host's kernel enforces XFS quotas: the demo takes the loopback route, no fallback to check")
		return
	}
	fake := t.TempDir()
	crash := "#!/bin/sh\necho 'userspace - ptrace set fp regs failed, errno = 14'\n" +
		"echo 'Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b'\n" +
		"for i in $(seq 90); do echo \"[<ffffffff>] Call Trace line $i\"; done\nexit 1\n"
	if err := os.WriteFile(filepath.Join(fake, "linux.uml"), []byte(crash), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("./demo.sh")
	cmd.Env = append(os.Environ(), "PATH="+fake+":"+os.Getenv("PATH"), "XFSQ_KERNELTEST_ROUTES=uml")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo.sh: %v\n%s", err, out)
	}
	s := string(out)
	start := strings.Index(s, "(no kernel with XFS project quotas: no route boots a kernel with XFS quotas: uml: userspace")
	end := strings.Index(s, "(using the fallback backend")
	if start < 0 || end < start {
		t.Fatalf("the demo did not say why it fell back:\n%s", s)
	}
	if why := s[start:end]; strings.Count(why, "\n") > 2 || !strings.Contains(why, "ptrace set fp regs failed") {
		t.Errorf("the reason should be the route's own words in at most two lines, got:\n%s", why)
	}
	if strings.Contains(s, "Call Trace") {
		t.Errorf("the demo printed the kernel's dump:\n%s", s)
	}
	if !strings.Contains(s, `project "omni": ok`) && !strings.Contains(s, "backend: fallback") {
		t.Errorf("the fallback tour did not run:\n%s", s)
	}
}
