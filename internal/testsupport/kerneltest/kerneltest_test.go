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
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/testsupport/prereq"
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
			// For the next case to look for: each gets a filesystem of its own.
			if err := os.WriteFile(filepath.Join(fs.Dir, "left-by-Passes"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{Name: "FailsOnPurpose", Run: func(t *testing.T, fs *FS) {
			entries, err := os.ReadDir(fs.Dir)
			mark(t, fmt.Sprintf("ran on %d entries (%v)", len(entries), err))
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

// A route that crashes, before the program starts or while it runs, is
// reported with its reason and the next route runs the cases from the
// start; a case that fails inside fails on the host; -test.run filters
// cases inside; XFSQ_TEST_* variables reach the inside.
func TestCrashingRouteFallsBackAndFailuresInsideFailOnTheHost(t *testing.T) {
	// The child is told its routes (uml, then qemu), so whether this host
	// could enforce quotas natively does not matter: a host that can must
	// pass this test too.
	if !haveCommand("mkfs.xfs") || !haveCommand(qemuBinary) {
		prereq.Missing(t, "this test runs the QEMU route: apt-get install "+Packages)
		return
	}
	for _, c := range []struct{ name, fake, reason string }{
		// What Debian 12's linux.uml prints on a host whose XSAVE area
		// it cannot handle.
		{"at boot", "echo 'userspace - ptrace set fp regs failed, errno = 14'\n" +
			"echo 'Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b'\nexit 1\n",
			"passed over uml: userspace - ptrace set fp regs failed"},
		// A kernel that reaches the program (the run script's "started"
		// mark, beside the script named by init=) and dies under it.
		{"under the program", "for a; do case $a in init=*) dir=$(dirname \"${a#init=}\");; esac; done\n" +
			"echo 0.5 >\"$dir/started\"\n" +
			"echo 'BUG: kernel NULL pointer dereference, address: 0000000000000008'\n" +
			"echo 'Kernel panic - not syncing: Fatal exception'\nexit 1\n",
			"passed over uml: crashed while the program ran: BUG: kernel NULL pointer dereference"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake := t.TempDir()
			if err := os.WriteFile(filepath.Join(fake, "linux.uml"), []byte("#!/bin/sh\n"+c.fake), 0o755); err != nil {
				t.Fatal(err)
			}
			reports := t.TempDir()
			reportFile, detailFile := filepath.Join(reports, "report"), filepath.Join(reports, "detail")
			out, code, marks := child(t, "^TestKernelHarnessHelper$/^(Passes|FailsOnPurpose)$",
				"PATH="+fake+":"+os.Getenv("PATH"), "XFSQ_KERNELTEST_ROUTES=uml,qemu", envFail+"=1",
				envReport+"="+reportFile, envDetail+"="+detailFile)
			// The closing line names uml unusable without its console,
			// which the detail file keeps.
			closing, detail := readMark(reports, "report"), readMark(reports, "detail")
			if strings.Contains(closing, "Kernel panic") || strings.Contains(closing, "BUG:") || strings.Contains(closing, "ptrace") ||
				!strings.Contains(closing, "passed over uml: unusable on this CPU, which is expected (its console lines are in "+detailFile+")") {
				t.Errorf("the report line:\n%s", closing)
			}
			if !strings.Contains(detail, c.reason) {
				t.Errorf("the detail file lacks %q:\n%s", c.reason, detail)
			}
			for _, want := range []string{
				c.reason, "Kernel panic - not syncing", "kernel tests: qemu (",
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
			if got := readMark(marks, "FailsOnPurpose"); got != "ran on 0 entries (<nil>)" {
				t.Errorf("the case after Passes %s, want it on a filesystem of its own, empty", got)
			}
			if got := readMark(marks, "FilteredOut"); got != "" {
				t.Errorf("a case the -test.run filter excludes ran inside")
			}
		})
	}
}

// With nothing set, the routes are tried in the order #14 asks: native,
// then QEMU (KVM or TCG), then user-mode Linux.
func TestRoutesAreTriedNativeThenQEMUThenUML(t *testing.T) {
	t.Setenv("XFSQ_KERNELTEST_ROUTES", "")
	if got := strings.Join(routeNames(), ","); got != "native,qemu,uml" {
		t.Errorf("routes tried: %s, want native,qemu,uml", got)
	}
	var kinds []string
	for _, r := range vmRoutes() {
		kinds = append(kinds, r.kind())
	}
	if got := strings.Join(kinds, ","); got != "qemu,uml" {
		t.Errorf("VM routes tried: %s, want qemu,uml", got)
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
		{"[ 9.1] BUG: kernel NULL pointer dereference, address: 08\n[ 9.1] #PF: supervisor read access\n[ 9.2] Oops: 0000 [#1] SMP\n",
			"[ 9.1] BUG: kernel NULL pointer dereference, address: 08 / [ 9.2] Oops: 0000 [#1] SMP"},
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

// fakeRoute "boots" by running one shell script per boot on the host: it
// marks the program started, then either finishes it (prints the boot's
// number, status 0) or dies as a kernel would under it.
type fakeRoute struct {
	id      string
	crashes func(boot int) bool
	boots   int
}

func (f *fakeRoute) kind() string             { return f.id }
func (f *fakeRoute) name() string             { return f.id }
func (f *fakeRoute) prepare() (string, error) { return "fake", nil }
func (f *fakeRoute) device() string           { return "/dev/null" }
func (f *fakeRoute) prelude() string          { return "" }
func (f *fakeRoute) epilogue() string         { return "" }
func (f *fakeRoute) defaultMem() string       { return "1M" }
func (f *fakeRoute) command(w *bootWork) *exec.Cmd {
	f.boots++
	script := `echo 0.1 >"$1"; echo "` + f.id + ` boot ` + strconv.Itoa(f.boots) + `" >"$3"; echo 0 >"$2"`
	if f.crashes(f.boots) {
		script = `echo 0.1 >"$1"; echo 'Kernel panic - not syncing: Fatal exception in ` + f.id + `'; exit 1`
	}
	return exec.Command("/bin/sh", "-c", script, "sh", w.started, w.rc, w.output)
}

// A route that crashes under the program — on its first boot or on a later
// one, after it was chosen — is passed over for good, with its console's
// reason, and the program runs again on the next route; only when every
// route crashes is the run a failure, naming each.
func TestARouteCrashingUnderTheProgramIsPassedOver(t *testing.T) {
	always := func(int) bool { return true }
	never := func(int) bool { return false }
	fromSecond := func(boot int) bool { return boot >= 2 }
	cases := []struct {
		name     string
		routes   []*fakeRoute
		outputs  []string // each Run's output, or "error: …" for its error
		skipped  string   // the last report's reasons
		bootsOfA int
	}{
		{"the first route crashes on its first boot",
			[]*fakeRoute{{id: "a", crashes: always}, {id: "b", crashes: never}},
			[]string{"b boot 1", "b boot 2"}, "a: crashed while the program ran: Kernel panic - not syncing: Fatal exception in a", 1},
		{"the chosen route crashes on a later boot",
			[]*fakeRoute{{id: "a", crashes: fromSecond}, {id: "b", crashes: never}},
			[]string{"a boot 1", "b boot 1", "b boot 2"}, "a: crashed while the program ran: Kernel panic - not syncing: Fatal exception in a", 2},
		{"every route crashes",
			[]*fakeRoute{{id: "a", crashes: always}, {id: "b", crashes: always}},
			[]string{"error: no route ran the program to its end: a: crashed while the program ran: Kernel panic - not syncing: Fatal exception in a; " +
				"b: crashed while the program ran: Kernel panic - not syncing: Fatal exception in b; the last console:\n" +
				"Kernel panic - not syncing: Fatal exception in b"}, "", 1},
	}
	defer func(l func() []vmRoute) { routeList = l }(routeList)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chosen, chosenAt, passed, failed, unusable = nil, RouteReport{}, nil, nil, nil
			t.Cleanup(func() { chosen, chosenAt, passed, failed, unusable = nil, RouteReport{}, nil, nil, nil })
			routeList = func() []vmRoute { return []vmRoute{c.routes[0], c.routes[1]} }
			var last BootResult
			for i, want := range c.outputs {
				res, err := Boot{Binary: "/bin/true", Timeout: time.Minute}.Run()
				got := strings.TrimSpace(string(res.Output))
				if err != nil {
					got = "error: " + strings.TrimSpace(err.Error())
				}
				if got != want {
					t.Errorf("run %d: %q, want %q", i+1, got, want)
				}
				last = res
			}
			if got := strings.Join(last.Route.Skipped, "; "); got != c.skipped {
				t.Errorf("the last report passes over %q, want %q", got, c.skipped)
			}
			if c.skipped != "" && strings.Join(last.Route.Unusable, ",") != "a" {
				t.Errorf("the last report names %q unusable, want route a, which crashed", last.Route.Unusable)
			}
			if c.routes[0].boots != c.bootsOfA {
				t.Errorf("route a booted %d times, want %d: a route that crashed is never tried again", c.routes[0].boots, c.bootsOfA)
			}
		})
	}
}

// KVM is used only after a probe boot reached its program in time: a
// guest that hangs in early boot (nested virtualization) or a QEMU that
// refuses KVM means TCG, with the reason; no /dev/kvm means TCG without one.
// The answer is kept per host boot, so a second package does not probe
// again. The QEMU here is a fake that plays each part.
func TestKVMIsUsedOnlyAfterAProbeBootAnswers(t *testing.T) {
	fake := `#!/bin/sh
echo probe >>"$XFSQ_TEST_FAKE_QEMU_LOG"
for a; do case $a in *xfsq.run=*) dir=$(dirname "${a##*xfsq.run=}");; esac; done
case $XFSQ_TEST_FAKE_QEMU in
answer) echo 0.4 >"$dir/started"; echo 0 >"$dir/rc";;
hang) sleep 30;;
refuse) echo 'qemu-system-x86_64: error: failed to set MSR 0x10a to 0x2000000f'; exit 1;;
esac
`
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, qemuBinary), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	defer func(d string, p time.Duration) { kvmDevice, kvmProbeTimeout = d, p }(kvmDevice, kvmProbeTimeout)
	kvmProbeTimeout = 3 * time.Second
	for _, c := range []struct {
		mode   string
		kvm    bool // whether there is a /dev/kvm to open
		want   bool
		why    string
		probes int
	}{
		{"answer", true, true, "", 1},
		{"hang", true, false, "probe boot did not answer within 3s", 1},
		{"refuse", true, false, "probe boot failed: qemu-system-x86_64: error: failed to set MSR 0x10a to 0x2000000f", 1},
		{"answer", false, false, "", 0},
	} {
		t.Run(fmt.Sprintf("%s, /dev/kvm %v", c.mode, c.kvm), func(t *testing.T) {
			t.Setenv("XFSQ_KERNELTEST_CACHE", t.TempDir())
			log := filepath.Join(t.TempDir(), "probes")
			t.Setenv("XFSQ_TEST_FAKE_QEMU_LOG", log)
			t.Setenv("XFSQ_TEST_FAKE_QEMU", c.mode)
			kvmDevice = filepath.Join(t.TempDir(), "kvm")
			if c.kvm {
				if err := os.WriteFile(kvmDevice, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			for range 2 { // the second answer comes from the memo
				q := &qemuRoute{kernel: vmKernel{Vmlinuz: "/nonexistent", Initrd: "/nonexistent"}}
				if ok, why := q.kvmWorks(); ok != c.want || why != c.why {
					t.Errorf("kvmWorks() = %v, %q; want %v, %q", ok, why, c.want, c.why)
				}
			}
			b, _ := os.ReadFile(log)
			if n := strings.Count(string(b), "probe"); n != c.probes {
				t.Errorf("QEMU was started %d times for two asks, want %d", n, c.probes)
			}
		})
	}
}

// The kernel and initramfs are made once and then reused: apt is not even
// asked while the cache is less than a day old; after that a newer kernel
// package is fetched (and, if it cannot be, the cached kernel still
// boots); a cache made by another recipe is never used.
func TestTheKernelCacheIsReusedAndRenewed(t *testing.T) {
	busybox, err := staticBusybox()
	if err != nil {
		prereq.Missing(t, err.Error())
		return
	}
	fake := `#!/bin/sh
echo "$(basename "$0") $1" >>"$XFSQ_TEST_FAKE_APT_LOG"
case $(basename "$0")-$XFSQ_TEST_FAKE_APT in
apt-cache-same) echo 'linux-image-amd64'; echo '  Depends: linux-image-6.1.0-57-amd64';;
apt-cache-newer) echo 'linux-image-amd64'; echo '  Depends: linux-image-6.1.0-99-amd64';;
*) echo 'E: Failed to fetch'; exit 100;;
esac
`
	bin := t.TempDir()
	for _, name := range []string{"apt-cache", "apt-get"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(fake), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	for _, c := range []struct {
		name  string
		stamp string        // of the cached initramfs; "" is this recipe's
		age   time.Duration // of the ready mark
		apt   string        // what the fake apt answers
		calls string        // what was asked of apt
		ok    bool          // the cached kernel is returned
	}{
		{"fresh", "", time.Hour, "newer", "", true},
		{"a day old, no newer kernel", "", 25 * time.Hour, "same", "apt-cache depends", true},
		{"a day old, a newer kernel not fetched", "", 25 * time.Hour, "newer", "apt-cache depends apt-get download", true},
		{"a day old, apt cannot say", "", 25 * time.Hour, "fail", "apt-cache depends", true},
		{"another recipe's", "0123456789abcdef", time.Hour, "fail", "apt-cache depends", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("XFSQ_KERNELTEST_CACHE", dir)
			log := filepath.Join(dir, "apt.log")
			t.Setenv("XFSQ_TEST_FAKE_APT_LOG", log)
			t.Setenv("XFSQ_TEST_FAKE_APT", c.apt)
			stamp := c.stamp
			if stamp == "" {
				stamp = initramfsStamp(busybox)
			}
			k := vmKernel{Version: "6.1.0-57-amd64", Vmlinuz: filepath.Join(dir, "vmlinuz"), Initrd: filepath.Join(dir, "initrd.gz")}
			for _, p := range []string{k.Vmlinuz, k.Initrd} {
				os.WriteFile(p, nil, 0o644)
			}
			ready := filepath.Join(dir, "ready-"+stamp)
			os.WriteFile(ready, []byte(k.Version+"\n"+k.Vmlinuz+"\n"+k.Initrd+"\n"), 0o644)
			then := time.Now().Add(-c.age)
			os.Chtimes(ready, then, then)

			got, err := debianKernel()
			if c.ok && (err != nil || got != k) {
				t.Errorf("debianKernel() = %+v, %v; want the cached %+v", got, err, k)
			}
			if !c.ok && err == nil {
				t.Errorf("debianKernel() = %+v from another recipe's cache, want a rebuild (failing here)", got)
			}
			b, _ := os.ReadFile(log)
			if calls := strings.Join(strings.Fields(string(b)), " "); calls != c.calls {
				t.Errorf("apt was asked %q, want %q", calls, c.calls)
			}
			if st, err := os.Stat(ready); c.apt == "same" && (err != nil || time.Since(st.ModTime()) > time.Hour) {
				t.Errorf("a checked cache is not marked checked: %v", err)
			}
		})
	}
}

// The closing lines of a test run name a route that could not run here
// without its console (a kernel panic read there alarms for nothing when a
// later route ran the tests); the full line keeps every reason.
func TestSummaryLeavesOutTheConsoleOfUnusableRoutes(t *testing.T) {
	r := RouteReport{Route: "qemu (tcg)", Detail: "Debian kernel 6.1.0-57-amd64", Skipped: []string{
		"native: the host kernel has no XFS quota support (CONFIG_XFS_QUOTA off)",
		"uml: crashed while the program ran: BUG: kernel NULL pointer dereference; Kernel panic - not syncing: Fatal exception",
	}, Unusable: []string{"uml"}}
	sum := r.Summary("its console lines are in /tmp/x")
	for _, bad := range []string{"BUG:", "Kernel panic"} {
		if strings.Contains(sum, bad) {
			t.Errorf("the summary quotes %q: %s", bad, sum)
		}
	}
	for _, want := range []string{"kernel tests: qemu (tcg), Debian kernel 6.1.0-57-amd64",
		"passed over native: the host kernel has no XFS quota support",
		"passed over uml: unusable on this CPU, which is expected (its console lines are in /tmp/x)"} {
		if !strings.Contains(sum, want) {
			t.Errorf("the summary lacks %q: %s", want, sum)
		}
	}
	if full := r.String(); !strings.Contains(full, "Kernel panic - not syncing") {
		t.Errorf("the full line lost the console: %s", full)
	}
}
