// Package kerneltest runs tests against real XFS (and ext4, where a case
// asks) with project quotas enforced by a real kernel.
//
// The harness picks a route by itself and names it, one line per package
// (kept in $XFSQ_KERNELTEST_REPORT when set, for scripts/test.sh to print):
//
//   - native: the host kernel mounts a loopback image with prjquota; each
//     case gets a fresh image.
//   - a VM (boot.go): where the host kernel cannot (CONFIG_XFS_QUOTA off, as
//     on the machines this project is built on), the whole set of cases
//     runs in one boot of Debian's stock kernel in QEMU (KVM only after a
//     probe boot answered, else software emulation), or failing that of
//     Debian's user-mode Linux. The guest sees the host's / and so runs the
//     very same test binary; each case there gets a freshly made filesystem
//     on the guest's scratch disk, and the host reports every case as its
//     own subtest with the output it printed. A route that cannot boot is
//     reported with its reason and the next is tried.
//
// Without any route the cases skip with the packages to install — except
// under CI=true, where they fail.
//
// This package must never touch a filesystem it did not make itself.
package kerneltest

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/capdrop"
	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// Environment of a test binary running inside the test kernel.
const (
	envInside = "XFSQ_KERNELTEST_INSIDE" // "1" inside the test kernel
	envDevice = "XFSQ_KERNELTEST_DEVICE" // the scratch block device there
	envReport = "XFSQ_KERNELTEST_REPORT" // a file the route line is appended to
	envDetail = "XFSQ_KERNELTEST_DETAIL" // a file the full line goes to when a route was unusable
)

// Packages is what to install for the kernel tests, for messages.
const Packages = "xfsprogs e2fsprogs quota qemu-system-x86 busybox-static"

// FS is a freshly made filesystem (XFS, or ext4 where a case asks) mounted
// for one case.
type FS struct {
	Dir    string // mount point
	Device string // block device (loop device natively, the VM's scratch disk inside)
	Type   string // TypeXFS or TypeExt4
	tb     testing.TB
}

// Filesystem types a case can ask for.
const (
	TypeXFS  = "xfs"
	TypeExt4 = "ext4" // made with -O quota,project, as scripts/loopback-ext4.sh makes it
)

// Case is one kernel test; Run gets a fresh filesystem mounted with prjquota.
//
// On ext4 (FS: TypeExt4) Run runs without CAP_SYS_RESOURCE on its thread,
// as a container's writer does: with it, the kernel's generic quota code
// lets root past a hard limit. Goroutines Run starts keep the capability,
// and so do the processes it runs (root regains it at exec), xfsq among
// them: xfsq must drop it for its own writes.
type Case struct {
	Name string
	Run  func(t *testing.T, fs *FS)
	FS   string // TypeXFS ("" too) or TypeExt4
}

// OnExt4 is c run on ext4: the same case, named with an Ext4 suffix.
func OnExt4(c Case) Case {
	c.Name += "OnExt4"
	c.FS = TypeExt4
	return c
}

// run gives the case its filesystem and runs it.
func (c Case) run(t *testing.T) {
	if c.FS != TypeExt4 {
		c.Run(t, newFS(t, TypeXFS, "prjquota"))
		return
	}
	if why := nativeExt4Missing(); why != "" {
		Unavailable(t, why)
		return
	}
	fs := newFS(t, TypeExt4, "prjquota")
	if err := capdrop.WithoutSysResource(func() error { c.Run(t, fs); return nil }); err != nil {
		t.Fatal(err)
	}
}

// Inside reports whether this process runs inside the test kernel.
func Inside() bool { return os.Getenv(envInside) == "1" }

// Run runs cases against real XFS quotas, each as a subtest of t. Call it
// once per package from a test named TestKernel…, so that one boot serves
// the whole package.
func Run(t *testing.T, cases []Case) {
	switch mode := detect(); mode.route {
	case routeInside, routeNative:
		if mode.route == routeNative {
			report(t, RouteReport{Route: "native", Detail: "loopback XFS on the host kernel", Skipped: nil})
		}
		for _, c := range cases {
			t.Run(c.Name, c.run)
		}
	case routeVM:
		relayFromVM(t, cases, mode.why)
	default:
		Unavailable(t, mode.why)
	}
}

// report logs the route line and appends it to $XFSQ_KERNELTEST_REPORT:
// go test shows a passing package's log only with -v, and the route taken
// is worth seeing on every run. The file gets the Summary, which names a
// route that could not run here without quoting its console; the full
// line, console and all, goes to the log and to $XFSQ_KERNELTEST_DETAIL.
func report(t *testing.T, r RouteReport) {
	where := " [" + prereq.PackageDir() + " " + t.Name() + "]"
	t.Log(r.String() + where)
	detail := "go test -v shows its console lines"
	if path := os.Getenv(envDetail); path != "" && len(r.Unusable) > 0 {
		detail = "its console lines are in " + path
		appendLine(path, r.String()+where)
	}
	if path := os.Getenv(envReport); path != "" {
		appendLine(path, r.Summary(detail)+where)
	}
}

func appendLine(path, line string) {
	if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintln(f, line)
		f.Close()
	}
}

// Unavailable skips t, or fails it under CI=true, naming what is missing.
func Unavailable(tb testing.TB, why string) {
	tb.Helper()
	msg := "kernel tests cannot run: " + why + "; install them with: apt-get install " + Packages
	prereq.Missing(tb, msg)
}

// ForBenchmark gives a benchmark a fresh filesystem when it runs inside the
// test kernel or on a host that can mount prjquota natively; elsewhere it
// skips and names scripts/kernel-bench.sh, which boots the kernel for it.
// The filesystem is XFS, or ext4 when $XFSQ_KERNELTEST_FS says ext4
// (scripts/kernel-bench.sh --fs ext4).
func ForBenchmark(b *testing.B) *FS {
	if r := detect().route; r != routeInside && r != routeNative {
		b.Skip("kernel benchmarks run inside the test kernel: scripts/kernel-bench.sh")
	}
	if os.Getenv(envFS) == TypeExt4 {
		if why := nativeExt4Missing(); why != "" {
			b.Skip(why)
		}
		return newFS(b, TypeExt4, "prjquota")
	}
	return newFS(b, TypeXFS, "prjquota")
}

// envFS picks the benchmarks' filesystem.
const envFS = "XFSQ_KERNELTEST_FS"

type route int

const (
	routeNone route = iota
	routeInside
	routeNative
	routeVM
)

type detection struct {
	route route
	why   string // for routeNone: what is missing; for routeVM: why not native
}

var (
	detectOnce sync.Once
	detected   detection
)

func detect() detection {
	detectOnce.Do(func() {
		switch {
		case Inside():
			detected = detection{route: routeInside}
		case !haveCommand("mkfs.xfs"):
			detected = detection{why: "mkfs.xfs (xfsprogs) is not installed"}
		default:
			why := "not tried (XFSQ_KERNELTEST_ROUTES)"
			if routeAllowed("native") {
				why = nativeQuota()
			}
			switch {
			case why == "":
				detected = detection{route: routeNative}
			case !haveCommand(qemuBinary) && !haveCommand("linux.uml"):
				detected = detection{why: "the host kernel cannot (" + why + ") and neither " + qemuBinary + " (qemu-system-x86) nor linux.uml (user-mode-linux) is installed"}
			default:
				detected = detection{route: routeVM, why: why}
			}
		}
	})
	return detected
}

func haveCommand(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

// nativeQuota tries a loop mount with prjquota on the host kernel; it
// returns why that does not work, or "".
func nativeQuota() string {
	if os.Geteuid() != 0 {
		return "loop mounts need root"
	}
	dir, err := os.MkdirTemp("", "xfsq-probe-")
	if err != nil {
		return err.Error()
	}
	defer os.RemoveAll(dir)
	img, mnt := filepath.Join(dir, "probe.img"), filepath.Join(dir, "mnt")
	if err := makeImage(img, TypeXFS); err != nil {
		return err.Error()
	}
	if err := os.Mkdir(mnt, 0o755); err != nil {
		return err.Error()
	}
	if out, err := exec.Command("mount", "-o", "loop,prjquota", img, mnt).CombinedOutput(); err != nil {
		if _, err := os.Stat("/proc/fs/xfs/xqm"); err != nil {
			return "the host kernel has no XFS quota support (CONFIG_XFS_QUOTA off)"
		}
		first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		return "mount -o loop,prjquota: " + first
	}
	exec.Command("umount", mnt).Run()
	return ""
}

// imageSize is the smallest image mkfs.xfs (xfsprogs 6.1) accepts; sparse,
// so it costs only what is written.
const imageSize = 300 << 20

func makeImage(path, fstype string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := f.Truncate(imageSize); err != nil {
		f.Close()
		return err
	}
	f.Close()
	return mkfs(path, fstype)
}

func mkfs(target, fstype string) error {
	args := []string{"mkfs.xfs", "-q", "-f", target}
	if fstype == TypeExt4 {
		args = []string{"mkfs.ext4", "-q", "-F", "-O", "quota,project", target}
	}
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", args[0], target, err, out)
	}
	return nil
}

var (
	nativeExt4Once sync.Once
	nativeExt4Why  string
)

// nativeExt4Missing says why an ext4 case cannot run here, or "". Inside
// the test kernel it always can (its initramfs loads ext4 and quota_v2);
// natively the host kernel needs the quota format module, which the
// machines this project is built on lack.
func nativeExt4Missing() string {
	if Inside() {
		return ""
	}
	nativeExt4Once.Do(func() {
		if !haveCommand("mkfs.ext4") {
			nativeExt4Why = "mkfs.ext4 (e2fsprogs) is not installed"
			return
		}
		dir, err := os.MkdirTemp("", "xfsq-probe-")
		if err != nil {
			nativeExt4Why = err.Error()
			return
		}
		defer os.RemoveAll(dir)
		img, mnt := filepath.Join(dir, "probe.img"), filepath.Join(dir, "mnt")
		if err := makeImage(img, TypeExt4); err != nil {
			nativeExt4Why = err.Error()
			return
		}
		os.Mkdir(mnt, 0o755)
		if out, err := exec.Command("mount", "-o", "loop,prjquota", img, mnt).CombinedOutput(); err != nil {
			first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
			nativeExt4Why = "the host kernel mounts XFS with quotas but not ext4 with prjquota (" + first +
				"; it needs CONFIG_QFMT_V2): run the kernel tests in the VM (XFSQ_KERNELTEST_ROUTES=qemu)"
			return
		}
		exec.Command("umount", mnt).Run()
	})
	return nativeExt4Why
}

// newFS makes and mounts a fresh filesystem, unmounted when tb ends.
func newFS(tb testing.TB, fstype, opts string) *FS {
	tb.Helper()
	fs := &FS{Dir: tb.TempDir(), Type: fstype, tb: tb}
	if Inside() {
		fs.Device = os.Getenv(envDevice)
		if err := mkfs(fs.Device, fstype); err != nil {
			tb.Fatal(err)
		}
	} else {
		fs.Device = filepath.Join(tb.TempDir(), fstype+".img")
		if err := makeImage(fs.Device, fstype); err != nil {
			tb.Fatal(err)
		}
	}
	fs.mount(opts)
	tb.Cleanup(fs.unmount)
	return fs
}

// Remount unmounts the filesystem and mounts it again with opts (e.g. ""
// for no quota, "pqnoenforce" for accounting only).
func (fs *FS) Remount(opts string) {
	fs.tb.Helper()
	fs.unmount()
	fs.mount(opts)
}

func (fs *FS) mount(opts string) {
	fs.tb.Helper()
	var err error
	if Inside() {
		err = unix.Mount(fs.Device, fs.Dir, fs.Type, 0, opts)
	} else {
		var out []byte
		out, err = exec.Command("mount", "-o", strings.Trim("loop,"+opts, ","), fs.Device, fs.Dir).CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%v: %s", err, out)
		}
	}
	if err != nil {
		fs.tb.Fatalf("mount %s on %s with %q: %v", fs.Device, fs.Dir, opts, err)
	}
}

func (fs *FS) unmount() {
	err := unix.Unmount(fs.Dir, 0)
	if errors.Is(err, unix.EBUSY) {
		// Blame the case that leaked, then detach so the next case can run.
		fs.tb.Errorf("unmount %s: still in use when the case ended: a file or quota handle was left open", fs.Dir)
		err = unix.Unmount(fs.Dir, unix.MNT_DETACH)
	}
	if err != nil && !errors.Is(err, unix.EINVAL) {
		fs.tb.Errorf("unmount %s: %v", fs.Dir, err)
	}
}

// relayFromVM boots the test kernel once for all cases and reports each
// case's outcome inside as a host subtest.
func relayFromVM(t *testing.T, cases []Case, notNative string) {
	pattern := "^" + t.Name() + "$"
	if _, sub, ok := strings.Cut(flagValue("test.run"), "/"); ok {
		pattern += "/" + sub
	}
	timeout := 10 * time.Minute
	if d, ok := t.Deadline(); ok {
		timeout = time.Until(d) - 15*time.Second
	}
	args := []string{"-test.run", pattern, "-test.v", "-test.timeout", (timeout - 15*time.Second).String()}
	if c := flagValue("test.count"); c != "" && c != "1" {
		args = append(args, "-test.count", c)
	}
	cwd, _ := os.Getwd()
	// Tests hand things to the kernel side (e.g. a binary they built) in
	// XFSQ_TEST_* variables; so does CI (XFSQ_TEST_POSTGRES).
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "XFSQ_TEST_") || strings.HasPrefix(kv, "CI=") {
			env = append(env, kv)
		}
	}
	res, err := Boot{Binary: os.Args[0], Args: args, Env: env, Dir: cwd, Timeout: timeout}.Run()
	if res.Route.Route != "" {
		res.Route.Skipped = append([]string{"native: " + notNative}, res.Route.Skipped...)
		report(t, res.Route)
	}
	if err != nil {
		if res.Route.Route == "" {
			Unavailable(t, "native: "+notNative+"; "+err.Error())
			return
		}
		t.Fatalf("test kernel (%s): %v", res.Route.Route, err)
	}
	results := parseVerbose(res.Output, t.Name())
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			r, ok := results[c.Name]
			switch {
			case !ok:
				t.Fatalf("case did not run inside the test kernel (exit %d); its output:\n%s\nconsole:\n%s",
					res.ExitCode, res.Output, tail(res.Console, 4000))
			case r.status == "PASS":
				t.Logf("passed inside the test kernel:\n%s", r.output)
			case r.status == "SKIP":
				Unavailable(t, "skipped inside the test kernel:\n"+r.output)
			case r.status == "FAIL":
				t.Fatalf("failed inside the test kernel:\n%s", r.output)
			default:
				t.Fatalf("did not finish inside the test kernel (exit %d):\n%s", res.ExitCode, r.output)
			}
		})
	}
}

func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

type caseResult struct {
	status string // PASS, FAIL, SKIP, or "" when it never finished
	output string
}

// parseVerbose splits `-test.v` output of top's subtests by case.
func parseVerbose(out []byte, top string) map[string]*caseResult {
	results := map[string]*caseResult{}
	caseOf := func(name string) *caseResult {
		rest, ok := strings.CutPrefix(name, top+"/")
		if !ok {
			return nil
		}
		c, _, _ := strings.Cut(rest, "/")
		if results[c] == nil {
			results[c] = &caseResult{}
		}
		return results[c]
	}
	var current *caseResult
	for _, line := range strings.Split(string(out), "\n") {
		trimmed := strings.TrimSpace(line)
		fields := strings.Fields(trimmed)
		switch {
		case len(fields) >= 3 && fields[0] == "===" && (fields[1] == "RUN" || fields[1] == "CONT"):
			current = caseOf(fields[2])
			continue
		case len(fields) >= 3 && fields[0] == "---" && strings.HasSuffix(fields[1], ":"):
			if r := caseOf(fields[2]); r != nil {
				if rest, _ := strings.CutPrefix(fields[2], top+"/"); !strings.Contains(rest, "/") {
					r.status = strings.TrimSuffix(fields[1], ":")
				}
				r.output += line + "\n"
				continue
			}
		}
		if current != nil {
			current.output += line + "\n"
		}
	}
	return results
}

// Fill writes n zero bytes to a new file at path in 1 MiB chunks, then
// fsyncs it; it returns how many bytes went in and the error that stopped
// it — the way kernel tests run into a quota.
func Fill(path string, n int) (int, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	const chunkSize = 1 << 20
	chunk := make([]byte, chunkSize)
	written := 0
	for written < n {
		w, err := f.Write(chunk[:min(chunkSize, n-written)])
		written += w
		if err != nil {
			return written, err
		}
	}
	return written, f.Sync()
}
