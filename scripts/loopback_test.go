// Package scripts_test exercises the shell scripts installers run.
package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

func run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	return runScript(t, "./loopback-xfs.sh", nil, args...)
}

// runEnv runs the script with env added to this process's environment.
func runEnv(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	return runScript(t, "./loopback-xfs.sh", env, args...)
}

func TestLoopbackXFS(t *testing.T) {
	if _, err := exec.LookPath("mkfs.xfs"); err != nil {
		prereq.Missing(t, "mkfs.xfs missing: apt-get install xfsprogs")
	}
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "x.img"), filepath.Join(dir, "mnt")

	if out, code := run(t, "bogus"); code != 2 || !strings.Contains(out, "create IMAGE SIZE") {
		t.Errorf("unknown command: exit %d, output %q; want usage and exit 2", code, out)
	}
	if out, code := run(t, "create", img, "100M", "--any-kernel"); code != 1 || !strings.Contains(out, "at least 300M") {
		t.Errorf("create too small: exit %d, %q", code, out)
	}
	if _, err := os.Stat(img); err == nil {
		t.Error("a refused create left the image behind")
	}
	// On a kernel that cannot enforce XFS quotas, create refuses before it
	// makes anything, and the fix is the operator's: another kernel, or
	// the fallback backend.
	noQuota := []string{"XFSQ_LOOPBACK_XQM=" + filepath.Join(dir, "no-xqm")}
	if out, code := runEnv(t, noQuota, "create", img, "300M"); code != 1 || !strings.Contains(out, "CONFIG_XFS_QUOTA") ||
		!strings.Contains(out, "xfsq init --backend fallback") || !strings.Contains(out, "--any-kernel") {
		t.Errorf("create on a kernel without XFS quota: exit %d, %q; want a refusal naming CONFIG_XFS_QUOTA and the fallback backend", code, out)
	}
	if _, err := os.Stat(img); err == nil {
		t.Error("a create refused for the kernel left the image behind")
	}
	if out, code := runEnv(t, noQuota, "create", img, "300M", "--any-kernel"); code != 0 {
		t.Fatalf("create --any-kernel: exit %d, %q", code, out)
	}
	os.Remove(img)
	// A kernel that can: /proc/fs/xfs/xqm is there.
	withQuota := []string{"XFSQ_LOOPBACK_XQM=/proc/self/status"}
	if out, code := runEnv(t, withQuota, "create", img, "300M"); code != 0 {
		t.Fatalf("create: exit %d, %q", code, out)
	}
	if out, code := run(t, "create", img, "300M", "--any-kernel"); code != 1 || !strings.Contains(out, "already exists") {
		t.Errorf("create over an existing image: exit %d, %q", code, out)
	}
	if os.Geteuid() != 0 {
		prereq.Missing(t, "mount needs root (CI runs as root)")
	}
	out, code := run(t, "mount", img, mnt)
	if _, err := os.Stat("/proc/fs/xfs/xqm"); err != nil {
		// This kernel cannot enforce XFS quotas: the script must say so and name the way out.
		if code != 1 || !strings.Contains(out, "CONFIG_XFS_QUOTA") || !strings.Contains(out, "xfsq init --backend fallback") {
			t.Errorf("mount on a kernel without XFS quota: exit %d, %q; want a refusal naming CONFIG_XFS_QUOTA and the fallback backend", code, out)
		}
		return
	}
	if code != 0 {
		t.Fatalf("mount: exit %d, %q", code, out)
	}
	defer exec.Command("umount", mnt).Run()
	if out, code := run(t, "status", mnt); code != 0 || !strings.Contains(out, "prjquota") {
		t.Errorf("status: exit %d, %q", code, out)
	}
	if out, code := run(t, "umount", mnt); code != 0 {
		t.Errorf("umount: exit %d, %q", code, out)
	}
}
