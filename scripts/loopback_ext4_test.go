package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// runExt4 runs loopback-ext4.sh with extra environment (e.g. a PATH with
// a stub in front).
func runExt4(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	return runScript(t, "./loopback-ext4.sh", env, args...)
}

// runScript runs a script with extra environment; its output and exit code.
func runScript(t *testing.T, script string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(script, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func features(t *testing.T, img string) string {
	t.Helper()
	out, err := exec.Command("dumpe2fs", "-h", img).CombinedOutput()
	if err != nil {
		t.Fatalf("dumpe2fs -h %s: %v: %s", img, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f, ok := strings.CutPrefix(line, "Filesystem features:"); ok {
			return " " + strings.Join(strings.Fields(f), " ") + " "
		}
	}
	return ""
}

// Each trap of ext4 project quotas is checked and named with its fix: an
// e2fsprogs older than 1.43, inodes with no room for a project ID, the
// features turned on only while unmounted, a kernel without the quota
// format, and a limit above ext4's largest.
func TestLoopbackExt4(t *testing.T) {
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		prereq.Missing(t, "mkfs.ext4 missing: apt-get install e2fsprogs")
	}
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "e.img"), filepath.Join(dir, "mnt")
	if out, code := runExt4(t, nil, "bogus"); code != 2 || !strings.Contains(out, "create IMAGE SIZE") {
		t.Errorf("unknown command: exit %d, %q; want usage and exit 2", code, out)
	}

	stubs := t.TempDir()
	os.WriteFile(filepath.Join(stubs, "mke2fs"), []byte("#!/bin/sh\necho 'mke2fs 1.42.9 (28-Dec-2013)' >&2\n"), 0o755)
	if out, code := runExt4(t, []string{"PATH=" + stubs + ":" + os.Getenv("PATH")}, "create", img, "64M"); code != 1 || !strings.Contains(out, "older than 1.43") {
		t.Errorf("create with e2fsprogs 1.42.9: exit %d, %q; want a refusal naming 1.43", code, out)
	}

	if out, code := runExt4(t, nil, "create", img, "64M"); code != 0 {
		t.Fatalf("create: exit %d, %q", code, out)
	}
	if f := features(t, img); !strings.Contains(f, " quota ") || !strings.Contains(f, " project ") {
		t.Errorf("the created image's features %q lack quota or project", f)
	}
	if out, code := runExt4(t, nil, "create", img, "64M"); code != 1 || !strings.Contains(out, "already exists") {
		t.Errorf("create over an existing image: exit %d, %q", code, out)
	}

	small := filepath.Join(dir, "small-inodes.img")
	plain := filepath.Join(dir, "plain.img")
	for _, im := range []struct {
		path string
		args []string
	}{{small, []string{"-I", "128"}}, {plain, nil}} {
		exec.Command("truncate", "-s", "64M", im.path).Run()
		if out, err := exec.Command("mkfs.ext4", append(append([]string{"-q", "-F"}, im.args...), im.path)...).CombinedOutput(); err != nil {
			t.Fatalf("mkfs.ext4 %s: %v: %s", im.path, err, out)
		}
	}
	if out, code := runExt4(t, nil, "enable", small); code != 1 || !strings.Contains(out, "-I 256") {
		t.Errorf("enable on 128-byte inodes: exit %d, %q; want a refusal naming mkfs.ext4 -I 256", code, out)
	}
	if out, code := runExt4(t, nil, "enable", plain); code != 0 {
		t.Errorf("enable on an unmounted ext4 image: exit %d, %q", code, out)
	}
	if f := features(t, plain); !strings.Contains(f, " quota ") || !strings.Contains(f, " project ") {
		t.Errorf("after enable the features are %q", f)
	}

	if out, code := runExt4(t, nil, "check-limit", "10T"); code != 0 {
		t.Errorf("check-limit 10T: exit %d, %q", code, out)
	}
	for _, size := range []string{"8E", "99999999999999999999T"} {
		if out, code := runExt4(t, nil, "check-limit", size); code != 1 || !strings.Contains(out, "above ext4's largest project limit, 8 EiB less 1 KiB") {
			t.Errorf("check-limit %s: exit %d, %q; want a refusal naming ext4's maximum", size, code, out)
		}
	}

	if os.Geteuid() != 0 {
		prereq.Missing(t, "mount needs root (CI runs as root)")
	}
	out, code := runExt4(t, nil, "mount", img, mnt)
	if strings.Contains(out, "CONFIG_QFMT_V2") {
		// This kernel cannot mount an image with the quota feature: the
		// script must say so and name the way out.
		if code != 1 || !strings.Contains(out, "qemu-system-x86") {
			t.Errorf("mount on a kernel without the quota format: exit %d, %q; want a refusal naming the VM route", code, out)
		}
		if _, err := os.Stat("/proc/modules"); err == nil {
			if mods, _ := os.ReadFile("/proc/modules"); strings.Contains(string(mods), "quota_v2 ") {
				t.Errorf("the script said CONFIG_QFMT_V2 is missing, yet quota_v2 is loaded")
			}
		}
		return
	}
	if code != 0 {
		t.Fatalf("mount: exit %d, %q", code, out)
	}
	defer exec.Command("umount", mnt).Run()
	if out, code := runExt4(t, nil, "status", mnt); code != 0 || !strings.Contains(out, "prjquota") {
		t.Errorf("status: exit %d, %q", code, out)
	}
	if out, code := runExt4(t, nil, "enable", img); code != 1 || !strings.Contains(out, "only be turned on while it is unmounted") {
		t.Errorf("enable while mounted: exit %d, %q; want a refusal naming the unmount", code, out)
	}
	if out, code := runExt4(t, nil, "umount", mnt); code != 0 {
		t.Errorf("umount: exit %d, %q", code, out)
	}
}
