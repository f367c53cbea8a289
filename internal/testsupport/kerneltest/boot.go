package kerneltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Boot runs one program inside a kernel that enforces XFS project quotas,
// on whichever VM route works on this machine (see vmRoutes), with the
// host's / as its root, so host paths are valid inside, and a fresh sparse
// scratch disk attached. The program sees XFSQ_KERNELTEST_INSIDE=1 and
// XFSQ_KERNELTEST_DEVICE (the scratch disk), and TMPDIR on a tmpfs of the
// guest.
type Boot struct {
	Binary  string
	Args    []string
	Env     []string // extra KEY=VALUE for the program
	Dir     string   // working directory inside
	Mem     string   // guest memory, e.g. 1G; each route has a default
	Disk    int64    // scratch disk bytes; default 300 MB, the least mkfs.xfs takes
	Timeout time.Duration
}

// BootResult is what the program printed and its exit status; Console is
// the kernel's own output, for diagnosing a boot that went wrong.
type BootResult struct {
	Output   []byte
	ExitCode int
	Console  []byte
	Route    RouteReport
}

// RouteReport says how a program was run: the route, its details, how long
// the guest took to reach the program, and why earlier routes were passed
// over.
type RouteReport struct {
	Route   string        // "native", "qemu (tcg)", "qemu (kvm)", "uml"
	Detail  string        // e.g. "Debian kernel 6.1.0-57-amd64"
	Boot    time.Duration // guest uptime when the program started
	Skipped []string      // "uml: Kernel panic - not syncing: …"
	// Unusable names the routes among Skipped whose kernel did not boot or
	// crashed: their reasons are console lines, which Summary leaves out.
	Unusable []string
}

// String is the one line the harness prints per package, every reason in
// full.
func (r RouteReport) String() string { return r.line("") }

// Summary is String for the closing lines of a test run: a route whose
// kernel did not boot or crashed is said to be unusable on this CPU — what
// happens to user-mode Linux on hosts with a large XSAVE area, and what a
// newcomer must not take for a failure when a later route ran the tests —
// without quoting its console; detail says where those lines are.
func (r RouteReport) Summary(detail string) string { return r.line(detail) }

// line renders the report; with a detail, unusable routes' reasons are
// left out for it.
func (r RouteReport) line(detail string) string {
	s := "kernel tests: " + r.Route
	if r.Detail != "" {
		s += ", " + r.Detail
	}
	if r.Boot > 0 {
		s += fmt.Sprintf(", boot %.1f s", r.Boot.Seconds())
	}
	for _, sk := range r.Skipped {
		name, _, _ := strings.Cut(sk, ": ")
		if detail != "" && slices.Contains(r.Unusable, name) {
			s += "; passed over " + name + ": unusable on this CPU, which is expected (" + detail + ")"
		} else {
			s += "; passed over " + sk
		}
	}
	return s
}

// vmRoute is one way of booting a kernel that enforces XFS quotas.
type vmRoute interface {
	kind() string // "qemu", "uml": as XFSQ_KERNELTEST_ROUTES names it
	name() string // kind and details once prepared, e.g. "qemu (tcg)"
	// prepare makes the route ready (fetches a kernel, probes KVM) and
	// returns details for the report, or why the route cannot be used.
	prepare() (detail string, err error)
	device() string                // the scratch disk inside
	prelude() string               // shell lines run first inside
	epilogue() string              // shell lines run last inside
	defaultMem() string            // e.g. 2G
	command(w *bootWork) *exec.Cmd // the boot itself
}

// bootWork is the host directory one boot works in; the guest sees it at
// the same path.
type bootWork struct {
	dir, image, script, console, output, rc, started string
	mem                                              string
}

// errNotStarted marks a boot that never reached the program: the route
// does not work here, and the next one may.
type errNotStarted struct{ reason string }

func (e *errNotStarted) Error() string { return e.reason }

// errCrashed marks a kernel that stopped after the program started and
// before it finished: a panic, an oops that killed init, the emulator
// dying. The route is not to be trusted with the rest of the run, and the
// program is run again from the start on the next route that boots.
type errCrashed struct {
	reason  string // the console's trouble lines
	console []byte
	cause   error // how the kernel's process ended
}

func (e *errCrashed) Error() string {
	return fmt.Sprintf("the kernel stopped before the program finished (%v); console:\n%s", e.cause, tail(e.console, 4000))
}

// Route order: each route is tried in turn until one boots; the first that
// did is kept for the rest of the process.
var (
	chooseMu sync.Mutex
	chosen   vmRoute
	chosenAt RouteReport
	passed   []string        // reasons routes were passed over, for every report
	unusable []string        // names of the routes among passed that did not boot or crashed
	failed   map[string]bool // routes that did not boot or crashed: never tried again
)

// routeNames is the order routes are tried in: native first, then QEMU, as
// it works on any x86-64 CPU; user-mode Linux only where QEMU is missing or
// fails (its 6.1 kernel dies on hosts with a large XSAVE area, e.g.
// AVX-512 with AMX). XFSQ_KERNELTEST_ROUTES (e.g. "uml,qemu") reorders or
// narrows them, for the harness's own tests.
func routeNames() []string {
	if s := os.Getenv("XFSQ_KERNELTEST_ROUTES"); s != "" {
		return strings.Split(s, ",")
	}
	return []string{"native", "qemu", "uml"}
}

func routeAllowed(name string) bool {
	for _, n := range routeNames() {
		if strings.TrimSpace(n) == name {
			return true
		}
	}
	return false
}

// routeList gives the routes Run tries; the harness's own tests replace it.
var routeList = vmRoutes

// vmRoutes are the VM routes, in order.
func vmRoutes() []vmRoute {
	var rs []vmRoute
	for _, n := range routeNames() {
		switch strings.TrimSpace(n) {
		case "qemu":
			rs = append(rs, &qemuRoute{})
		case "uml":
			rs = append(rs, umlRoute{})
		}
	}
	return rs
}

// Run boots a kernel on the first route that works and waits for the
// program; an error means no route could run it (the program's own failure
// is in ExitCode). A route whose kernel crashes while the program runs is
// passed over like one that never booted, and the program runs again on
// the next: a crash of one route is never the end of a run another route
// can finish.
func (b Boot) Run() (BootResult, error) {
	chooseMu.Lock()
	defer chooseMu.Unlock()
	if chosen != nil {
		res, err := bootOn(chosen, b)
		var crash *errCrashed
		if !errors.As(err, &crash) {
			res.Route.Route, res.Route.Detail, res.Route.Skipped, res.Route.Unusable = chosenAt.Route, chosenAt.Detail, passed, unusable
			return res, err
		}
		passOver(chosen, "crashed while the program ran: "+crash.reason, true)
		chosen = nil
	}
	var lastCrash *errCrashed
	for _, r := range routeList() {
		if failed[r.kind()] {
			continue
		}
		detail, err := r.prepare()
		if err != nil {
			passOver(r, err.Error(), false)
			continue
		}
		res, err := bootOn(r, b)
		var ns *errNotStarted
		if errors.As(err, &ns) {
			passOver(r, ns.reason, true)
			continue
		}
		if errors.As(err, &lastCrash) {
			passOver(r, "crashed while the program ran: "+lastCrash.reason, true)
			continue
		}
		chosen, chosenAt = r, RouteReport{Route: r.name(), Detail: detail}
		res.Route.Route, res.Route.Detail, res.Route.Skipped, res.Route.Unusable = r.name(), detail, passed, unusable
		return res, err
	}
	if lastCrash != nil { // the console of the last crash is the one to read
		return BootResult{}, fmt.Errorf("no route ran the program to its end: %s; the last console:\n%s",
			strings.Join(passed, "; "), tail(lastCrash.console, 4000))
	}
	return BootResult{}, fmt.Errorf("no route boots a kernel with XFS quotas: %s", strings.Join(passed, "; "))
}

// passOver records why r is not used, for every later report, and never
// tries it again in this process; console says why is the kernel's own
// output (it did not boot, or crashed), not a missing tool.
func passOver(r vmRoute, why string, console bool) {
	if failed == nil {
		failed = map[string]bool{}
	}
	failed[r.kind()] = true
	passed = append(passed, r.name()+": "+why)
	if console {
		unusable = append(unusable, r.name())
	}
}

// bootOn boots one route once.
func bootOn(r vmRoute, b Boot) (BootResult, error) {
	dir, err := os.MkdirTemp("", "xfsq-vm-")
	if err != nil {
		return BootResult{}, err
	}
	defer os.RemoveAll(dir)
	w := &bootWork{dir: dir, image: filepath.Join(dir, "scratch.img"), script: filepath.Join(dir, "run.sh"),
		console: filepath.Join(dir, "console"), output: filepath.Join(dir, "output"), rc: filepath.Join(dir, "rc"),
		started: filepath.Join(dir, "started"), mem: b.Mem}
	if w.mem == "" {
		w.mem = r.defaultMem()
	}
	if strings.ContainsAny(dir, " \t\n'\"") {
		return BootResult{}, fmt.Errorf("temporary directory %q holds characters the kernel command line cannot carry", dir)
	}
	// The guest makes its own filesystems on it; sparse, it costs only
	// what they write.
	img, err := os.Create(w.image)
	if err != nil {
		return BootResult{}, err
	}
	size := b.Disk
	if size < imageSize {
		size = imageSize
	}
	err = img.Truncate(size)
	img.Close()
	if err != nil {
		return BootResult{}, err
	}
	if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o1777); err != nil {
		return BootResult{}, err
	}
	if err := os.WriteFile(w.script, []byte(runScript(r, b, w)), 0o755); err != nil {
		return BootResult{}, err
	}
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := r.command(w)
	// Kernels fork helpers (UML) or run long: kill the whole group on time-out.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var console bytes.Buffer
	cmd.Stdout, cmd.Stderr = &console, &console
	if err := cmd.Start(); err != nil {
		return BootResult{}, &errNotStarted{fmt.Sprintf("%s: %v", cmd.Path, err)}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var runErr error
	select {
	case runErr = <-done:
	case <-ctx.Done():
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		runErr = <-done
	}
	if c, err := os.ReadFile(w.console); err == nil {
		console.Write(c)
	}
	res := BootResult{Console: console.Bytes()}
	res.Output, _ = os.ReadFile(w.output)
	started, err := os.ReadFile(w.started)
	if err != nil {
		why := consoleReason(res.Console)
		if ctx.Err() != nil {
			why = fmt.Sprintf("no program started within %s (%s)", timeout, why)
		} else if why == "" {
			why = fmt.Sprintf("the kernel stopped before the program started (%v)", runErr)
		}
		return res, &errNotStarted{why}
	}
	if up, err := strconv.ParseFloat(strings.TrimSpace(string(started)), 64); err == nil {
		res.Route.Boot = time.Duration(up * float64(time.Second))
	}
	rc, err := os.ReadFile(w.rc)
	if err != nil {
		if ctx.Err() != nil {
			return res, fmt.Errorf("the program did not finish within %s; its output:\n%s", timeout, tail(res.Output, 8000))
		}
		why := consoleReason(res.Console)
		if why == "" {
			why = fmt.Sprintf("%v", runErr)
		}
		return res, &errCrashed{reason: why, console: res.Console, cause: runErr}
	}
	res.ExitCode, err = strconv.Atoi(strings.TrimSpace(string(rc)))
	if err != nil {
		return res, fmt.Errorf("bad exit status %q from inside the kernel", rc)
	}
	return res, nil
}

// runScript is what runs inside: route set-up, then the program with its
// output and status in files the host reads after the boot.
func runScript(r vmRoute, b Boot, w *bootWork) string {
	var s strings.Builder
	s.WriteString("#!/bin/sh\n")
	s.WriteString("export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/go/bin\n")
	s.WriteString(r.prelude())
	fmt.Fprintf(&s, "cut -d' ' -f1 /proc/uptime >%s\n", shellQuote(w.started))
	// Test temporaries on the guest's own tmpfs: the host's /tmp over a
	// shared filesystem is slow, and a case must not see another's files.
	fmt.Fprintf(&s, "mount -t tmpfs -o size=50%% tmpfs %s\n", shellQuote(filepath.Join(w.dir, "tmp")))
	env := append([]string{envInside + "=1", envDevice + "=" + r.device(), "HOME=/root", "TMPDIR=" + filepath.Join(w.dir, "tmp")}, b.Env...)
	for _, kv := range env {
		s.WriteString("export " + shellQuote(kv) + "\n")
	}
	if b.Dir != "" {
		s.WriteString("cd " + shellQuote(b.Dir) + "\n")
	}
	binary, err := filepath.Abs(b.Binary)
	if err != nil {
		binary = b.Binary
	}
	s.WriteString(shellQuote(binary))
	for _, a := range b.Args {
		s.WriteString(" " + shellQuote(a))
	}
	fmt.Fprintf(&s, " >%s 2>&1 </dev/null\necho $? >%s\n", shellQuote(w.output), shellQuote(w.rc))
	fmt.Fprintf(&s, "umount %s\nsync\n", shellQuote(filepath.Join(w.dir, "tmp")))
	s.WriteString(r.epilogue())
	return s.String()
}

var consoleTrouble = regexp.MustCompile(`(?i)panic|not syncing|\bbug:|\boops\b|fail|error|unable|cannot|refused|errno`)

// consoleReason picks the console lines that say why a boot went wrong: the
// first few that sound like trouble, else the last few.
func consoleReason(console []byte) string {
	var lines, trouble []string
	for _, l := range strings.Split(string(console), "\n") {
		l = strings.TrimSpace(strings.Map(func(r rune) rune {
			if r < ' ' && r != '\t' {
				return -1
			}
			return r
		}, l))
		if l == "" {
			continue
		}
		lines = append(lines, l)
		if consoleTrouble.MatchString(l) && len(trouble) < 3 {
			trouble = append(trouble, l)
		}
	}
	if len(trouble) == 0 && len(lines) > 3 {
		trouble = lines[len(lines)-3:]
	} else if len(trouble) == 0 {
		trouble = lines
	}
	return strings.Join(trouble, " / ")
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// umlRoute boots Debian's user-mode Linux kernel, which sees the host's
// files through hostfs and needs no root and no emulator.
type umlRoute struct{}

func (umlRoute) kind() string { return "uml" }
func (umlRoute) name() string { return "uml" }

func (umlRoute) prepare() (string, error) {
	if !haveCommand("linux.uml") {
		return "", errors.New("linux.uml is not installed (apt-get install user-mode-linux)")
	}
	return "Debian user-mode Linux", nil
}

func (umlRoute) device() string     { return "/dev/ubda" }
func (umlRoute) defaultMem() string { return "768M" }
func (umlRoute) prelude() string {
	return "mount -t proc proc /proc\nmount -t sysfs sys /sys\n[ -e /dev/ubda ] || mount -t devtmpfs dev /dev\n"
}
func (umlRoute) epilogue() string { return "poweroff -f\n" }

func (umlRoute) command(w *bootWork) *exec.Cmd {
	cmd := exec.Command("linux.uml", "mem="+w.mem, "root=/dev/root", "rootfstype=hostfs",
		"rootflags=/", "rw", "init="+w.script, "ubd0="+w.image, "con=null", "con0=null,fd:1")
	cmd.Env = append(os.Environ(), "TMPDIR="+w.dir) // where UML keeps its memory file
	return cmd
}
