package kerneltest

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/prereq"
)

// The relay must never turn a failure inside the kernel into a pass.
func TestParseVerbose(t *testing.T) {
	out := `=== RUN   TestKernel
=== RUN   TestKernel/Passes
    x_test.go:10: a log line
=== RUN   TestKernel/Passes/inner
--- PASS: TestKernel/Passes/inner (0.00s)
--- PASS: TestKernel/Passes (0.10s)
=== RUN   TestKernel/Fails
    x_test.go:20: wanted 1, got 2
--- FAIL: TestKernel/Fails (0.20s)
=== RUN   TestKernel/Skips
    x_test.go:30: no reason
--- SKIP: TestKernel/Skips (0.00s)
=== RUN   TestKernel/Panics
panic: boom
`
	got := parseVerbose([]byte(out), "TestKernel")
	cases := []struct {
		name, status, contains string
	}{
		{"Passes", "PASS", "a log line"},
		{"Fails", "FAIL", "wanted 1, got 2"},
		{"Skips", "SKIP", "no reason"},
		{"Panics", "", "panic: boom"},
	}
	for _, c := range cases {
		r := got[c.name]
		if r == nil {
			t.Errorf("%s: not found", c.name)
			continue
		}
		if r.status != c.status || !strings.Contains(r.output, c.contains) {
			t.Errorf("%s: status %q output %q; want status %q containing %q", c.name, r.status, r.output, c.status, c.contains)
		}
	}
	if strings.Contains(got["Passes"].output, "wanted 1") {
		t.Error("output of one case leaked into another")
	}
	if len(got) != len(cases) {
		t.Errorf("found %d cases, want %d", len(got), len(cases))
	}
}

func TestShellQuote(t *testing.T) {
	if got := shellQuote(`it's $HOME`); got != `'it'\''s $HOME'` {
		t.Errorf("shellQuote = %s", got)
	}
}

// The harness's own end-to-end tests run this test binary again as a child
// with these set (XFSQ_TEST_* reach the inside of the kernel, so they also
// show that the environment is carried there).
const (
	envSelf = "XFSQ_TEST_HARNESS_SELF" // a directory for the cases' marker files
	envFail = "XFSQ_TEST_HARNESS_FAIL" // "1": the FailsOnPurpose case fails
)

// TestKernelHarnessHelper is the child's test; without envSelf it is not a
// child and has nothing to do.
func TestKernelHarnessHelper(t *testing.T) {
	marks := os.Getenv(envSelf)
	if marks == "" {
		return
	}
	mark := func(t *testing.T, what string) {
		if err := os.WriteFile(filepath.Join(marks, t.Name()[strings.LastIndex(t.Name(), "/")+1:]), []byte(what), 0o644); err != nil {
			t.Error(err)
		}
	}
	Run(t, []Case{
		{Name: "Passes", Run: func(t *testing.T, fs *FS) {
			var st unix.Statfs_t
			if err := unix.Statfs(fs.Dir, &st); err != nil {
				t.Fatal(err)
			}
			mark(t, fmt.Sprintf("inside=%v xfs=%v", Inside(), st.Type == unix.XFS_SUPER_MAGIC))
		}},
		{Name: "FailsOnPurpose", Run: func(t *testing.T, fs *FS) {
			mark(t, "ran")
			if os.Getenv(envFail) == "1" {
				t.Error("failing on purpose inside the kernel")
			}
		}},
		{Name: "FilteredOut", Run: func(t *testing.T, fs *FS) { mark(t, "ran") }},
	})
}

// child runs TestKernelHarnessHelper in a child process with env added; it
// returns the child's output, its exit code and the marker directory.
func child(t *testing.T, run string, env ...string) (string, int, string) {
	t.Helper()
	marks := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", run, "-test.v", "-test.count=1")
	cmd.Env = append(append(os.Environ(), envSelf+"="+marks), env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code, marks
}

func readMark(dir, name string) string {
	b, _ := os.ReadFile(filepath.Join(dir, name))
	return string(b)
}

// A route that crashes is reported with its reason and the next route
// runs the cases; a case that fails inside fails on the host; -test.run
// filters cases inside; XFSQ_TEST_* variables reach the inside.
func TestCrashingRouteFallsBackAndFailuresInsideFailOnTheHost(t *testing.T) {
	// The child is told its routes (uml, then qemu), so whether this host
	// could enforce quotas natively does not matter: a host that can must
	// pass this test too.
	if !haveCommand("mkfs.xfs") || !haveCommand(qemuBinary) {
		prereq.Missing(t, "this test runs the QEMU route: apt-get install "+Packages)
		return
	}
	fake := t.TempDir()
	// What Debian 12's linux.uml prints on a host whose XSAVE area it
	// cannot handle.
	script := "#!/bin/sh\necho 'userspace - ptrace set fp regs failed, errno = 14'\n" +
		"echo 'Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b'\nexit 1\n"
	if err := os.WriteFile(filepath.Join(fake, "linux.uml"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out, code, marks := child(t, "^TestKernelHarnessHelper$/^(Passes|FailsOnPurpose)$",
		"PATH="+fake+":"+os.Getenv("PATH"), "XFSQ_KERNELTEST_ROUTES=uml,qemu", envFail+"=1")
	for _, want := range []string{
		"passed over uml: ", "Kernel panic - not syncing", "kernel tests: qemu (",
		"--- PASS: TestKernelHarnessHelper/Passes",
		"--- FAIL: TestKernelHarnessHelper/FailsOnPurpose", "failing on purpose inside the kernel",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
	if code == 0 {
		t.Errorf("a case failed inside, yet the child exited 0:\n%s", out)
	}
	if got := readMark(marks, "Passes"); got != "inside=true xfs=true" {
		t.Errorf("the Passes case inside saw %q, want it inside the kernel on XFS", got)
	}
	if got := readMark(marks, "FilteredOut"); got != "" {
		t.Errorf("a case the -test.run filter excludes ran inside")
	}
}

// Under CI=true no route at all is a failure that names the packages;
// elsewhere a skip that does. Both ways: nothing installed to boot, and
// every route installed but none booting (each one's reason said).
func TestNoRouteFailsInCINamingThePackages(t *testing.T) {
	empty, crashing := t.TempDir(), t.TempDir()
	script := "#!/bin/sh\necho 'Kernel panic - not syncing: No working init found.'\nexit 1\n"
	if err := os.WriteFile(filepath.Join(crashing, "linux.uml"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	mkfs, err := exec.LookPath("mkfs.xfs")
	if err != nil {
		prereq.Missing(t, "mkfs.xfs: apt-get install "+Packages)
		return
	}
	os.Symlink(mkfs, filepath.Join(crashing, "mkfs.xfs"))
	for _, c := range []struct{ name, path, routes, want string }{
		{"nothing installed", empty, "qemu,uml", "mkfs.xfs (xfsprogs) is not installed"},
		{"no route boots", crashing, "uml", "no route boots a kernel with XFS quotas: uml: Kernel panic - not syncing: No working init found."},
	} {
		for _, ci := range []string{"true", ""} {
			out, code, _ := child(t, "^TestKernelHarnessHelper$", "PATH="+c.path, "CI="+ci, "XFSQ_KERNELTEST_ROUTES="+c.routes)
			if !strings.Contains(out, "kernel tests cannot run") || !strings.Contains(out, "apt-get install "+Packages) || !strings.Contains(out, c.want) {
				t.Errorf("%s, CI=%q: the message does not say %q and name the packages:\n%s", c.name, ci, c.want, out)
			}
			if wantFail := ci == "true"; (code != 0) != wantFail || strings.Contains(out, "--- SKIP") == wantFail {
				t.Errorf("%s, CI=%q: exit %d; want a failure only under CI=true, a skip otherwise:\n%s", c.name, ci, code, out)
			}
		}
	}
}

func TestConsoleReasonPicksTheTrouble(t *testing.T) {
	cases := []struct{ console, want string }{
		{"booting\nuserspace - ptrace set fp regs failed, errno = 14\nKernel panic - not syncing: Attempted to kill init!\nmore\n",
			"userspace - ptrace set fp regs failed, errno = 14 / Kernel panic - not syncing: Attempted to kill init!"},
		{"\x1b[2Ja\nb\nc\nd\n", "b / c / d"},
		{"", ""},
	}
	for _, c := range cases {
		if got := consoleReason([]byte(c.console)); got != c.want {
			t.Errorf("consoleReason(%q) = %q, want %q", c.console, got, c.want)
		}
	}
}

// The initramfs is a newc archive the kernel can read: check it with the
// format's own rules (magic, 4-byte alignment, trailer).
func TestInitramfsIsWellFormedNewc(t *testing.T) {
	var buf bytes.Buffer
	files := []initramfsFile{{path: "bin/busybox", mode: 0o755, data: []byte("12345")}, {path: "init", mode: 0o755, data: []byte("#!/bin/sh\n")}}
	if err := writeInitramfs(&buf, []string{"proc"}, files); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for off := 0; ; {
		if string(raw[off:off+6]) != "070701" {
			t.Fatalf("bad magic at %d", off)
		}
		field := func(i int) int {
			v, err := strconv.ParseUint(string(raw[off+6+8*i:off+14+8*i]), 16, 32)
			if err != nil {
				t.Fatal(err)
			}
			return int(v)
		}
		size, nameLen := field(6), field(11)
		name := string(raw[off+110 : off+110+nameLen-1])
		names = append(names, name)
		off = (off + 110 + nameLen + 3) &^ 3
		if name == "TRAILER!!!" {
			break
		}
		if name == "bin/busybox" && string(raw[off:off+size]) != "12345" {
			t.Errorf("busybox body = %q", raw[off:off+size])
		}
		off = (off + size + 3) &^ 3
	}
	want := "dev dev/console proc bin bin/busybox init TRAILER!!!"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("entries %q, want %q", got, want)
	}
}
