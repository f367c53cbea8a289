package main

// docs/cli.md is rendered from the command tree (internal/clidoc).
//go:generate sh -c "CGO_ENABLED=0 go run . cli-reference > ../../docs/cli.md"

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliargs"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/clidoc"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/textout"
	"github.com/xfsq/xfsq/units"
)

// newApp assembles the command tree. Each command group lives in its own
// cmd_GROUP.go with its definition, action and text renderer (as restic's
// cmd/restic does); what several share is in the packages under internal/
// (text output, argument reading, report columns, generated documents).
func newApp(stdout, stderr io.Writer) *cli.App {
	with := func(fn func(e env) error) cli.ActionFunc {
		return func(c *cli.Context) error {
			e := env{c: c, stdout: stdout, stderr: stderr, progress: textout.NewProgressLine(stderr)}
			defer e.progress.Clear()
			return fn(e)
		}
	}
	app := &cli.App{
		Name:  "xfsq",
		Usage: "bounded, visible storage for agent sandbox hosts",
		Description: "Every project tree under the sandbox root gets an XFS project ID, so the kernel enforces\n" +
			"hard byte and inode limits per project (on other filesystems xfsq falls back to application-level\n" +
			"quotas). Every change is journalled.\n\n" +
			"   Start:  xfsq --root /srv/sandbox init\n" +
			"           xfsq --root /srv/sandbox project add omni --bytes-hard 50GiB\n" +
			"           xfsq --root /srv/sandbox report\n\n" +
			"   SIZE is " + units.SizeForms + ".\n" +
			"   Exit codes: 0 success, 1 operation failed, 2 bad usage or input, 3 quota denied,\n" +
			"   128+N stopped by signal N (130 SIGINT, 143 SIGTERM). A full filesystem is 1, not 3.",
		Version:   version(),
		Writer:    stdout,
		ErrWriter: stderr,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "root", Usage: "the sandbox root", EnvVars: []string{"XFSQ_ROOT", "KERNEL_SANDBOX_ROOT"}},
			&cli.StringFlag{Name: "db", Usage: "database: a postgres:// URL or libpq keywords (host=… dbname=…), or a SQLite file (default ROOT/.xfsq/xfsq.db)", EnvVars: []string{"XFSQ_DB"}},
			&cli.BoolFlag{Name: "json", Usage: "print JSON (errors too, as {\"error\": …} on stderr)"},
			&cli.StringFlag{Name: "host", Usage: "this host's name in a shared database (default: the hostname)", EnvVars: []string{"XFSQ_HOST"}},
			&cli.StringFlag{Name: "id-range", Usage: "project IDs to allocate from, FIRST-LAST (default 100000-2147483647); a project needs one ID per tree " +
				"(workspace, cache and scratch: three), so a range of N IDs holds N/3 projects", EnvVars: []string{"XFSQ_ID_RANGE"}},
		},
		ExitErrHandler: func(*cli.Context, error) {}, // run() maps errors to exit codes
		Commands: []*cli.Command{
			initCommand(with),
			projectCommand(with),
			filesCommand(with),
			reportCommand(with),
			snapshotCommand(with),
			topCommand(with),
			diffCommand(with),
			sweepCommand(with),
			leaseCommand(with),
			eventsCommand(with),
			settingsCommand(with),
			exportCommand(with),
			doctorCommand(with),
			healthCommand(with),
			serveCommand(with),
			hostCommand(with),
			tokenCommand(with),
		},
	}
	app.Commands = append(app.Commands, clidoc.CompletionCommand())
	app.Commands = append(app.Commands, clidoc.DocCommands...)
	// The completion scripts ask the binary which words may follow.
	app.EnableBashCompletion = true
	cliargs.SetUsageErrors(app.Commands)
	cliargs.WrapLeaves(app.Commands)
	app.OnUsageError = cliargs.OnUsageError
	// `xfsq nosuch`: an error like any other, so that --json makes it JSON.
	app.Action = func(c *cli.Context) error {
		if c.NArg() > 0 {
			return cliargs.Usagef("unknown command %q: see xfsq --help", c.Args().First())
		}
		cli.ShowAppHelp(c)
		return nil
	}
	// `xfsq help nosuch`: urfave's help has no error to return.
	app.CommandNotFound = func(c *cli.Context, name string) {
		msg := fmt.Sprintf("unknown command %q: see xfsq --help", name)
		if c.Bool("json") {
			data, _ := json.Marshal(map[string]string{"error": msg})
			fmt.Fprintln(stderr, string(data))
		} else {
			fmt.Fprintln(stderr, "xfsq: "+msg)
		}
		os.Exit(exitUsage)
	}
	return app
}

// withEnv turns a command's action into urfave's, handing it the parsed
// globals and the output; each cmd_*.go builds its command with it.
type withEnv func(fn func(e env) error) cli.ActionFunc
