// Command xfsq manages the storage of an agent sandbox host: every project
// tree under the sandbox root gets an XFS project ID and kernel-enforced
// limits (or application-level ones on other filesystems), and every change
// is journalled. Each command is a thin shell over package sandbox, in its
// own cmd_GROUP.go; what several share is in internal/ beneath this one.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliargs"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliwords"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/stopsignal"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/textout"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/sandbox"
)

// Exit codes.
const (
	exitOK     = errkind.ExitOK
	exitFailed = errkind.ExitFailed // an operation failed
	exitUsage  = errkind.ExitUsage  // bad usage or input
	exitDenied = errkind.ExitDenied // a quota refused
)

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := stopsignal.Context()
	defer stop()
	app := newApp(stdout, stderr)
	// The CLI's caller is the OS user; the library journals whoever ctx names.
	parsed := args
	var err error
	if n := len(args); n == 0 || args[n-1] != "--generate-bash-completion" {
		// A completion script's request is left as typed: urfave/cli
		// completes the word before its flag, wherever interspersed would put it.
		parsed, err = cliargs.Interspersed(app, args)
	}
	if err == nil {
		err = app.RunContext(sandbox.WithActor(ctx, sandbox.DefaultActor()), parsed)
	}
	if err == nil {
		return exitOK
	}
	var ee *cliargs.ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	code := exitCode(err)
	var sig stopsignal.Interrupted
	if errors.As(context.Cause(ctx), &sig) {
		// A signal is the whole story: what the command was doing when it
		// stopped (a cancelled context, a half-read body) is noise.
		code = 128 + int(sig.Signal)
		err = sig
	}
	// The library keeps what to do beside the message; the CLI says both,
	// on the one line a script reads.
	msg := cliwords.Flagged(err)
	if hint := errkind.HintIn(err, cliwords.Words); hint != "" && !strings.Contains(msg, hint) {
		msg += ": " + hint
	}
	if cliargs.JSONRequested(args) {
		data, _ := json.Marshal(map[string]string{"error": msg})
		fmt.Fprintln(stderr, string(data))
	} else {
		// A message can quote a name a tenant chose: escaped, never raw.
		fmt.Fprintln(stderr, "xfsq: "+textout.Line(msg))
	}
	return code
}

// exitCode derives from the library's classification, as the server's
// statuses will: the two shells cannot disagree about a failure.
func exitCode(err error) int { return errkind.Of(err).ExitCode() }

// env is what every command needs: the parsed globals and the output.
type env struct {
	c        *cli.Context
	stdout   io.Writer
	stderr   io.Writer
	progress *textout.ProgressLine // nil when nothing shows progress
	// fullDisk is what the command may do with the store when its
	// filesystem is full, as it declares (reads, frees); refuse otherwise.
	fullDisk sandbox.FullDisk
}

func (e env) json() bool { return e.c.Bool("json") }

// watched reports whether a person watches: stdout and stderr on a
// terminal, no --json. Only then is there a progress line.
func (e env) watched() bool {
	return !e.json() && textout.IsTerminal(os.Stdout) && textout.IsTerminal(os.Stderr)
}

// root returns the sandbox root from --root / XFSQ_ROOT / KERNEL_SANDBOX_ROOT.
func (e env) root() (string, error) {
	r := e.c.String("root")
	if r == "" {
		// urfave takes the first variable that is set, even to "".
		r = os.Getenv("KERNEL_SANDBOX_ROOT")
	}
	if r == "" {
		return "", cliargs.Usagef("no sandbox root: pass --root DIR or set XFSQ_ROOT (or KERNEL_SANDBOX_ROOT)")
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
			return cfg, cliargs.Usagef("--id-range %q: use FIRST-LAST, e.g. 100000-199999", r)
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
		e.progress.Clear()
		fmt.Fprintln(e.stderr, "xfsq: "+textout.Line(r.Note))
	}
	return e.diskFull(cfg.Root, fn(e.c.Context, r.Manager))
}

// diskFull says that a failed write is the filesystem's, when it is full.
func (e env) diskFull(root string, err error) error { return sandbox.ExplainDiskFull(root, err) }

// print writes v as JSON with --json, else calls human.
func (e env) print(v any, human func(w io.Writer)) error {
	e.progress.Clear()
	if e.json() {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	human(e.stdout)
	return nil
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
