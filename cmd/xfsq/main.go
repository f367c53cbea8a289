// Command xfsq manages the storage of an agent sandbox host: every project
// tree under the sandbox root gets an XFS project ID and kernel-enforced
// limits (or application-level ones on other filesystems), and every change
// is journalled. Each command is a thin shell over package project.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/units"
)

// Exit codes.
const (
	exitOK     = errkind.ExitOK
	exitFailed = errkind.ExitFailed // an operation failed
	exitUsage  = errkind.ExitUsage  // bad usage or input
	exitDenied = errkind.ExitDenied // a quota refused
)

// usageError is bad usage or input: exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// Kind: the CLI's own usage errors are bad input, as the library's are.
func (e *usageError) Kind() errkind.Kind { return errkind.Input }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// exitError carries an exit code for an outcome already printed.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// interrupted is the cause of a command's context cancelled by a signal.
type interrupted struct{ sig syscall.Signal }

func (i interrupted) Error() string { return "interrupted (" + unix.SignalName(i.sig) + ")" }

// onSignal cancels the context with the signal as its cause, so that a
// command stopped by one says so and exits 128+signal, as a shell would.
func onSignal() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			cancel(interrupted{s.(syscall.Signal)})
		case <-done:
		}
	}()
	return ctx, func() { signal.Stop(sigs); close(done); cancel(nil) }
}

func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := onSignal()
	defer stop()
	app := newApp(stdout, stderr)
	// The CLI's caller is the OS user; the library journals whoever ctx names.
	parsed := args
	var err error
	if n := len(args); n == 0 || args[n-1] != "--generate-bash-completion" {
		// A completion script's request is left as typed: urfave/cli
		// completes the word before its flag, wherever interspersed would put it.
		parsed, err = interspersed(app, args)
	}
	if err == nil {
		err = app.RunContext(sandbox.WithActor(ctx, sandbox.DefaultActor()), parsed)
	}
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	code := exitCode(err)
	var sig interrupted
	if errors.As(context.Cause(ctx), &sig) {
		// A signal is the whole story: what the command was doing when it
		// stopped (a cancelled context, a half-read body) is noise.
		code = 128 + int(sig.sig)
		err = sig
	}
	// The library keeps what to do beside the message; the CLI says both,
	// on the one line a script reads.
	msg := flagged(err)
	if hint := errkind.HintIn(err, cliWords); hint != "" && !strings.Contains(msg, hint) {
		msg += ": " + hint
	}
	if jsonRequested(args) {
		data, _ := json.Marshal(map[string]string{"error": msg})
		fmt.Fprintln(stderr, string(data))
	} else {
		// A message can quote a name a tenant chose: escaped, never raw.
		fmt.Fprintln(stderr, "xfsq: "+line(msg))
	}
	return code
}

// exitCode derives from the library's classification, as the server's
// statuses will: the two shells cannot disagree about a failure.
func exitCode(err error) int { return errkind.Of(err).ExitCode() }

// flagged is err's message with the field the library names at its start
// put as the flag that sets it: depth → --depth, bytes_hard → --bytes-hard.
func flagged(err error) string {
	msg := err.Error()
	if f := errkind.FieldOf(err); f != "" && strings.HasPrefix(msg, f+" ") {
		return flagOf(f) + strings.TrimPrefix(msg, f)
	}
	return msg
}

// flagOf is the flag that sets a field the library names: bytes_hard →
// --bytes-hard; areas, the API's list, is --area's comma-separated one.
func flagOf(field string) string {
	if field == "areas" {
		field = "area"
	}
	return "--" + strings.ReplaceAll(field, "_", "-")
}

// cliWords words what a library hint names as this CLI does: an input as
// its flag, an operation as the command line that runs it.
var cliWords = errkind.Words{Field: flagOf, Action: commandLine}

// commands is the command that runs each operation a hint may ask for,
// and whether it takes the action's target (a project) as its first
// argument (TestEveryHintedOpIsACommand holds both against the app).
var commands = map[errkind.Op]struct {
	line   string
	target bool
}{
	errkind.OpInit:          {"init", false},
	errkind.OpDoctor:        {"doctor", false},
	errkind.OpProjectList:   {"project list", false},
	errkind.OpProjectShow:   {"project show", true},
	errkind.OpProjectAdd:    {"project add", true},
	errkind.OpProjectRemove: {"project rm", true},
	errkind.OpFilesRemove:   {"files rm", true},
	errkind.OpLeaseList:     {"lease list", false},
	errkind.OpLeaseRelease:  {"lease release", true},
	errkind.OpHostList:      {"host list", false},
	errkind.OpEvents:        {"events", false},
	errkind.OpSweep:         {"sweep", true},
	errkind.OpTop:           {"top", true},
	errkind.OpReport:        {"report", false},
}

// commandLine is the command line that runs a: xfsq doctor --fix,
// xfsq init --backend auto, xfsq top _root --area inbound. A target the
// command takes no argument for (lease list lists every project's) is
// left out.
func commandLine(a errkind.Action) string {
	c := commands[a.Op]
	words := []string{"xfsq", c.line}
	if a.Target != "" && c.target {
		words = append(words, a.Target)
	}
	for _, g := range a.Args {
		words = append(words, flagOf(g.Field))
		if g.Value != "" {
			words = append(words, g.Value)
		}
	}
	return strings.Join(words, " ")
}

// jsonRequested looks for --json before urfave has parsed anything, so that
// even a parse error is reported as JSON.
func jsonRequested(args []string) bool {
	for _, a := range args[1:] {
		if a == "--json" || a == "-json" || a == "--json=true" {
			return true
		}
		if a == "--" {
			return false
		}
	}
	return false
}

// env is what every command needs: the parsed globals and the output.
type env struct {
	c        *cli.Context
	stdout   io.Writer
	stderr   io.Writer
	progress *progressLine // nil when nothing shows progress
	// fullDisk is what the command may do with the store when its
	// filesystem is full, as it declares (reads, frees); refuse otherwise.
	fullDisk sandbox.FullDisk
}

func (e env) json() bool { return e.c.Bool("json") }

// root returns the sandbox root from --root / XFSQ_ROOT / KERNEL_SANDBOX_ROOT.
func (e env) root() (string, error) {
	r := e.c.String("root")
	if r == "" {
		// urfave takes the first variable that is set, even to "".
		r = os.Getenv("KERNEL_SANDBOX_ROOT")
	}
	if r == "" {
		return "", usagef("no sandbox root: pass --root DIR or set XFSQ_ROOT (or KERNEL_SANDBOX_ROOT)")
	}
	return filepath.Abs(r)
}

// config maps the global flags to the library's root configuration; the
// library decides the order in which it is checked and opened.
func (e env) config() (sandbox.Config, error) {
	root, err := e.root()
	if err != nil {
		return sandbox.Config{}, err
	}
	cfg := sandbox.Config{Root: root, DSN: e.c.String("db"), Host: e.c.String("host")}
	if r := e.c.String("id-range"); r != "" {
		if cfg.Range, err = sandbox.ParseIDRange(r); err != nil {
			return cfg, usagef("--id-range %q: use FIRST-LAST, e.g. 100000-199999", r)
		}
	}
	cfg.FullDisk = e.fullDisk
	return cfg, nil
}

// reads declares that a command only reads the store: on a full
// filesystem it opens it read-only rather than fail.
func reads(fn func(e env) error) func(e env) error {
	return func(e env) error { e.fullDisk = sandbox.FullDiskReadOnly; return fn(e) }
}

// frees declares that a command frees room: on a full filesystem it may
// spend the reserve beside the store to journal what it deletes.
func frees(fn func(e env) error) func(e env) error {
	return func(e env) error { e.fullDisk = sandbox.FullDiskSpendReserve; return fn(e) }
}

// manager opens the root the flags name and runs fn with its manager.
func (e env) manager(fn func(ctx context.Context, m *sandbox.Manager) error) error {
	cfg, err := e.config()
	if err != nil {
		return err
	}
	r, err := sandbox.OpenRoot(e.c.Context, cfg)
	if err != nil {
		return e.diskFull(cfg.Root, err)
	}
	defer r.Close()
	if r.Note != "" {
		e.progress.clear()
		fmt.Fprintln(e.stderr, "xfsq: "+line(r.Note))
	}
	return e.diskFull(cfg.Root, fn(e.c.Context, r.Manager))
}

// diskFull says that a failed write is the filesystem's, when it is full.
func (e env) diskFull(root string, err error) error { return sandbox.ExplainDiskFull(root, err) }

// print writes v as JSON with --json, else calls human.
func (e env) print(v any, human func(w io.Writer)) error {
	e.progress.clear()
	if e.json() {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	human(e.stdout)
	return nil
}

// numberFlag reads an optional size or count flag; nil when not given.
func numberFlag(c *cli.Context, name string, parse func(string) (uint64, error)) (*uint64, error) {
	if !c.IsSet(name) {
		return nil, nil
	}
	n, err := parse(c.String(name))
	if err != nil {
		return nil, usagef("--%s: %v", name, err)
	}
	return &n, nil
}

func limitFlags(c *cli.Context, prefix string) (sandbox.LimitChange, error) {
	var ch sandbox.LimitChange
	var err error
	for _, f := range []struct {
		name  string
		dst   **uint64
		parse func(string) (uint64, error)
	}{
		{prefix + "bytes-soft", &ch.BytesSoft, units.ParseSize}, {prefix + "bytes-hard", &ch.BytesHard, units.ParseSize},
		{prefix + "inodes-soft", &ch.InodesSoft, units.ParseCount}, {prefix + "inodes-hard", &ch.InodesHard, units.ParseCount},
	} {
		if *f.dst, err = numberFlag(c, f.name, f.parse); err != nil {
			return ch, err
		}
		if strings.Contains(f.name, "bytes-") {
			if err := checkBareBytes(c, f.name); err != nil {
				return ch, err
			}
		}
	}
	return ch, nil
}

// oneArg returns the single positional argument a command takes.
func oneArg(c *cli.Context, what string) (string, error) {
	if c.NArg() != 1 {
		name := commandName(c)
		return "", usagef("%s takes one %s, got %d arguments: see xfsq %s --help", name, what, c.NArg(), name)
	}
	return c.Args().First(), nil
}

// commandName is the command's path without the program, e.g. "project
// add"; "" for the program itself.
func commandName(c *cli.Context) string {
	if c.Command == nil || c.Command.HelpName == c.App.Name {
		return ""
	}
	return strings.TrimPrefix(c.Command.HelpName, c.App.Name+" ")
}

// version says which build this is, as the Go toolchain recorded it: the
// module version (a tag, or a pseudo-version naming the commit and whether
// the tree had changes when built with -buildvcs, as scripts/build-xfsq.sh
// does) and the Go release.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (built without module information)"
	}
	return bi.Main.Version + " " + bi.GoVersion
}
