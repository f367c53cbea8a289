package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/project"
	"github.com/xfsq/xfsq/settings"
	"github.com/xfsq/xfsq/units"
)

func newApp(stdout, stderr io.Writer) *cli.App {
	with := func(fn func(e env) error) cli.ActionFunc {
		return func(c *cli.Context) error {
			e := env{c: c, stdout: stdout, stderr: stderr, progress: &progressLine{w: stderr}}
			defer e.progress.clear()
			return fn(e)
		}
	}
	limitFlagSet := func(prefix, what string) []cli.Flag {
		return []cli.Flag{
			&cli.StringFlag{Name: prefix + "bytes-soft", Usage: what + " soft byte limit (SIZE; 0: no limit, as xfs_quota)"},
			&cli.StringFlag{Name: prefix + "bytes-hard", Usage: what + " hard byte limit (SIZE; 0: no limit, as xfs_quota)"},
			&cli.StringFlag{Name: prefix + "inodes-soft", Usage: what + " soft file-count limit (0: no limit)"},
			&cli.StringFlag{Name: prefix + "inodes-hard", Usage: what + " hard file-count limit (0: no limit)"},
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
			{
				Name:  "init",
				Usage: "create the sandbox root's layout, detect the quota backend, migrate the store (idempotent)",
				Description: "Creates projects/ cache/ scratch/ inbound/ and .xfsq/ under the root, detects XFS with\n" +
					"project quotas (else the fallback backend, with the reason), and creates or migrates the store.\n" +
					"--backend xfs fails (exit 1, with the reason and the fix) unless the kernel enforces XFS project\n" +
					"quotas on the root; the choice is recorded, and every later command fails the same way if they go.\n" +
					"--backend fallback uses application-level quotas even on XFS. Without --backend, init keeps the\n" +
					"recorded choice (auto the first time).",
				Flags:  []cli.Flag{&cli.StringFlag{Name: "backend", Usage: "auto (the kernel's project quotas where it enforces them, on XFS or ext4, else the fallback), xfs, ext4 or fallback"}},
				Action: with(cmdInit),
			},
			{
				Name:  "project",
				Usage: "add, change, remove and inspect projects",
				Subcommands: []*cli.Command{
					{
						Name: "add", Usage: "register a project: its trees, project IDs and limits", ArgsUsage: "NAME",
						Description: "Creates projects/NAME/{uploads,inbox}, cache/NAME and scratch/NAME (where its runs keep\n" +
							"scratch/NAME/RUN), gives each tree its own project ID and limits, and journals project.added.\n" +
							"NAME: " + project.NameRule + ".\n" +
							"The workspace hard limit defaults to the setting default_quota (50GiB, or\n" +
							"KERNEL_STORAGE_DEFAULT_QUOTA_BYTES), the cache's to default_cache_quota, the scratch's\n" +
							"(shared by all runs of the project) to default_scratch_quota.",
						Flags:  append(append(limitFlagSet("", "workspace"), limitFlagSet("cache-", "cache")...), limitFlagSet("scratch-", "scratch")...),
						Action: with(cmdProjectAdd),
					},
					{
						Name: "set", Usage: "change the limits of one tree of a project", ArgsUsage: "NAME",
						Flags: append(limitFlagSet("", "new"),
							&cli.StringFlag{Name: "area", Value: area.Workspace, Usage: areaUsage}),
						Action: with(cmdProjectSet),
					},
					{
						Name: "rm", Usage: "unregister a project (its data stays unless --purge)", ArgsUsage: "NAME",
						Description: "Clears the limits and unregisters the project. Project IDs are released once no file carries\n" +
							"them. With --purge its trees are deleted too, each deletion journalled as storage.evicted.\n" +
							"Refused (exit 1, naming the runs) while a run holds an unexpired lease on the project;\n" +
							"--force removes it anyway and is journalled as forced. Removing a project ends its leases.\n" +
							"--dry-run changes nothing: it answers as the removal would (refused while leased, unless --force) and says\n" +
							"what would be removed and, with --purge, how much it would delete.",
						Flags: []cli.Flag{&cli.BoolFlag{Name: "purge", Usage: "also delete the project's trees"},
							&cli.BoolFlag{Name: "force", Usage: "remove although a run holds a lease on the project"},
							&cli.BoolFlag{Name: "dry-run", Usage: "say what would be removed and deleted; change nothing"}},
						Action: with(cmdProjectRm),
					},
					{Name: "list", Usage: "list projects", Action: with(cmdProjectList)},
					{Name: "show", Usage: "a project's trees, IDs, usage and limits", ArgsUsage: "NAME", Action: with(cmdProjectShow),
						Description: "On the fallback backend usage is each tree's last walk plus the writes made through xfsq since\n" +
							"(usage_walked_at says when that walk began); --refresh walks the trees now.",
						Flags: []cli.Flag{refreshFlag()}},
					{
						Name: "check", Usage: "may a run of the project start? ok, warn or deny", ArgsUsage: "NAME",
						Description: "Exit 0 for ok and for warn (over a soft limit within grace; the warning goes to stderr),\n" +
							"3 for deny (at or over a hard limit, or over a soft limit past its grace).\n" +
							"On the fallback backend it reads the trees' last walk plus xfsq's writes since, and walks\n" +
							"nothing, so that a check before every run stays cheap; --refresh walks them first.",
						Flags:  []cli.Flag{refreshFlag()},
						Action: with(cmdProjectCheck),
					},
				},
			},
			{
				Name:  "files",
				Usage: "list, read, write and delete files inside a project tree, within its limits",
				Description: "PATH is relative to the project's tree (--area workspace by default; the root's inbound tree,\n" +
					"inbound/, is PROJECT " + project.RootOwner + " with --area inbound). Paths that are absolute,\n" +
					"contain \"..\", lead out of the tree through a symlink, or name devices, FIFOs or sockets are refused\n" +
					"(exit 2). Writes are admitted before they allocate anything and refused (exit 3) past a limit;\n" +
					"a refused or failed write leaves the old file exactly as it was. rm is journalled (storage.evicted).",
				Subcommands: []*cli.Command{
					{Name: "ls", Usage: "list a directory", ArgsUsage: "PROJECT [PATH]", Flags: []cli.Flag{areaFlag()}, Action: with(cmdFilesLs)},
					{Name: "get", Usage: "copy a file to stdout", ArgsUsage: "PROJECT PATH", Flags: []cli.Flag{areaFlag()}, Action: with(cmdFilesGet)},
					{
						Name: "put", Usage: "write stdin (or --from FILE) to a file, atomically", ArgsUsage: "PROJECT PATH",
						Flags:  []cli.Flag{areaFlag(), &cli.StringFlag{Name: "from", Usage: "read this file instead of stdin"}},
						Action: with(cmdFilesPut),
					},
					{Name: "rm", Usage: "delete a file, or with --recursive a directory (journalled)", ArgsUsage: "PROJECT PATH",
						Description: "A directory needs --recursive, as with rm -r. uploads/ and inbox/ are part of every workspace:\n" +
							"--recursive empties them (each entry journalled) and leaves them in place.",
						Flags:  []cli.Flag{areaFlag(), &cli.BoolFlag{Name: "recursive", Aliases: []string{"r"}, Usage: "delete a directory and everything in it"}},
						Action: with(cmdFilesRm)},
				},
			},
			{
				Name: "report", Usage: "usage and limits of every tree",
				Description: "One row per tree: project, area, project ID, used, soft, hard, inodes used/soft/hard, percent\n" +
					"of the hard byte limit, growth over 24 h and 7 d, last activity. --json prints an array of objects.\n\n" +
					"On XFS, usage is the kernel's count, read in one pass. On the fallback backend it is each tree's\n" +
					"last walk plus the writes made through xfsq since (usage_walked_at says when that walk began); the\n" +
					"hourly pass (xfsq snapshot --all) walks them again. --refresh walks every tree now.\n\n" +
					"GRACE says when a soft limit's grace ends (or ended). --check exits 1 when any tree shown is at\n" +
					"or over a hard limit (bytes or inodes), for a cron job or a monitor. Colour only on a terminal,\n" +
					"never with NO_COLOR set.",
				Flags: []cli.Flag{refreshFlag(), reportProjectFlag(), reportAreaFlag(),
					&cli.Float64Flag{Name: "over", Usage: "only trees at or over PERCENT of their hard byte limit"},
					&cli.StringFlag{Name: "sort", Value: "project", Usage: "order: project, used, percent or growth (largest first but project)"},
					&cli.BoolFlag{Name: "no-headers", Aliases: []string{"N"}, Usage: "no header or notes, rows only (as xfs_quota -N)"},
					&cli.BoolFlag{Name: "check", Usage: "exit 1 when any tree shown is at or over a hard limit"}},
				Action: with(cmdReport),
			},
			{
				Name: "snapshot", Usage: "walk trees, store their totals and top paths, print them", ArgsUsage: "[PROJECT…]",
				Description: "Walks each tree of the named projects (or, with --all, every tree: the root's inbound tree too;\n" +
					"--area inbound alone walks that one) like du: allocated and\n" +
					"apparent bytes, files, directories, newest mtime, aggregated to --depth with the --top largest\n" +
					"sub-paths per level and the --top largest files. Totals are kept for growth (report's growth_24h,\n" +
					"growth_7d). --all is the scheduled pass: it runs at idle I/O priority and nice 10 and journals one\n" +
					"storage.snapshot event. A tree that fails is reported and the others go on.",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "all", Usage: "every project"},
					&cli.StringFlag{Name: "area", Usage: "only this area (" + areaUsage + ")"},
					&cli.IntFlag{Name: "depth", Value: 3, Usage: "aggregate to this depth (1-8)"},
					&cli.IntFlag{Name: "top", Value: 20, Usage: "largest sub-paths per level and largest files kept"},
					durationFlag("budget", "", "stop each walk after this long and mark it partial (0: no limit)"),
				},
				Action: with(cmdSnapshot),
			},
			{
				Name: "top", Usage: "what fills a tree: sizes, percent and mtimes, largest first", ArgsUsage: "PROJECT [PATH]",
				Description: "Walks the tree, or the directory PATH inside it (relative to the tree; no \"..\", no symlink out of\n" +
					"it, no other mount), and shows each directory's allocated and apparent size, share, file count and\n" +
					"newest mtime, with the largest files beside the directories they sit among. The walk keeps the\n" +
					"max(--limit, 20) largest entries of each directory; --sort orders those and --limit are shown.\n" +
					"The root's inbound tree is PROJECT " + project.RootOwner + " with --area inbound.",
				Flags: []cli.Flag{areaFlag(), &cli.IntFlag{Name: "depth", Value: 2, Usage: "levels to show (1-8)"},
					&cli.IntFlag{Name: "limit", Value: 20, Usage: "entries shown per directory"},
					&cli.StringFlag{Name: "sort", Value: "size", Usage: "order of each directory's entries: size, files or mtime"}},
				Action: with(cmdTop),
			},
			{
				Name: "sweep", Usage: "delete what the retention policies name, journalling every deletion", ArgsUsage: "[PROJECT…]",
				Description: "Plans, then deletes: the quota check (storage.quota_exceeded for trees over their soft limit), then\n" +
					"caches over cache_quota_per_project (least recently used top-level entries, never one used within\n" +
					"cache_min_age), workspace trash (workspace_trash_globs older than workspace_trash_age), scratch of\n" +
					"finished runs older than scratch_ttl, and the root's inbound/ (PROJECT " + project.RootOwner + ", --area inbound):\n" +
					"each top-level entry not modified for inbound_ttl, staged and never processed. --all covers\n" +
					"inbound/ too; xfsq sweep --area inbound alone sweeps just it. Never touched: a workspace's uploads/,\n" +
					"inbox/, .git/ and git-tracked files (caches and scratch runs go whole, repositories in them too);\n" +
					"anything modified within busy_grace, leased projects, symlinks, other filesystems. Each entry is re-checked just before it goes and journalled (storage.evicted) before\n" +
					"and after; on the fallback its tree's ledger is credited, so report shows the bytes freed.\n" +
					"A cache entry's last use is the newest mtime or file atime inside it, as BuildKit's GC ages its\n" +
					"cache: how atimes move is the mount's choice. relatime (the default) records a file's first read\n" +
					"after a change, then at most one read a day, which is enough at cache_min_age's scale; with\n" +
					"strictatime every read counts; under noatime reads are never recorded and caches age by\n" +
					"modification only. Directory atimes are not used (walks read directories).\n" +
					"   Review first:  xfsq sweep --all --dry-run --plan-out plan.json\n" +
					"   Then:          xfsq sweep --apply plan.json",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "all", Usage: "every project"},
					&cli.StringFlag{Name: "area", Usage: "comma-separated areas: cache,workspace,scratch,inbound (default all; inbound is " + project.RootOwner + "'s)"},
					&cli.BoolFlag{Name: "dry-run", Usage: "plan and print, delete nothing"},
					&cli.StringFlag{Name: "plan-out", Usage: "save the plan to FILE (implies --dry-run)"},
					&cli.StringFlag{Name: "apply", Usage: "execute the plan --plan-out saved in FILE, once: refused if edited, older than plan_max_age, " +
						"or made for another root, host or settings; each entry is decided again and re-checked"},
					durationFlag("budget", "", "stop deleting after this long (0: no limit)"),
				},
				Action: with(cmdSweep),
			},
			{
				Name:  "lease",
				Usage: "run leases: while a run holds one, sweeps never touch its project",
				Subcommands: []*cli.Command{
					{
						Name: "acquire", Usage: "take or renew a run's lease", ArgsUsage: "PROJECT RUN",
						Description: "RUN: " + project.RunRule + ". The lease lapses after --ttl unless renewed.\n" +
							"A renewal never shortens a lease: one that already holds longer keeps its expiry\n" +
							"(kept_longer in --json); release it first to shorten it.",
						Flags:  []cli.Flag{&cli.StringFlag{Name: "ttl", Value: "2h", Usage: "how long the lease holds (at most 7d)"}},
						Action: with(cmdLeaseAcquire),
					},
					{Name: "release", Usage: "drop a run's lease", ArgsUsage: "PROJECT RUN", Action: with(cmdLeaseRelease)},
					{Name: "list", Usage: "every lease, held or lapsed", Action: with(cmdLeaseList)},
				},
			},
			{
				Name: "events", Usage: "the journal, newest first",
				Description: "One line a record: when (with its zone), what, where, how much, and who. A deletion is shown\n" +
					"once, with its final state (its pending record is dropped once settled).",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "type", Usage: "only this type, e.g. project.added, quota.changed, storage.evicted"},
					&cli.StringFlag{Name: "project", Usage: "only this project"},
					&cli.StringFlag{Name: "since", Usage: "only newer: a duration ago (24h, 7d), a date (2026-11-30), a local time (2026-11-30 10:00) or RFC 3339"},
					&cli.IntFlag{Name: "limit", Value: 100, Usage: "at most this many"},
					&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "print the last --limit oldest first, then each new record as it is journalled, until interrupted (with --json one object a line)"},
				},
				Action: with(cmdEvents),
			},
			{
				Name:  "settings",
				Usage: "installation settings (retention policies, default quotas)",
				Subcommands: []*cli.Command{
					{Name: "list", Usage: "every setting with its value and where it comes from", Action: with(cmdSettingsList)},
					{Name: "get", Usage: "one setting's value", ArgsUsage: "KEY", Action: with(cmdSettingsGet)},
					{Name: "reset", Usage: "forget a stored setting: the environment or the default applies again", ArgsUsage: "KEY",
						Action: with(cmdSettingsReset)},
					{Name: "set", Usage: "change a setting (validated)", ArgsUsage: "KEY VALUE", Action: with(cmdSettingsSet),
						Description: "A zero that switches a safety rail off (busy_grace, reservation_ttl, default_quota) is refused\n" +
							"unless " + settings.AllowZeroFlag + " says it is meant.",
						Flags: []cli.Flag{&cli.BoolFlag{Name: strings.TrimPrefix(settings.AllowZeroFlag, "--"), Usage: "accept a zero that switches a safety rail off"}}},
				},
			},
			{
				Name:  "export",
				Usage: "write xfsq's state in other tools' formats",
				Subcommands: []*cli.Command{{
					Name: "xfs-projects", Usage: "lines for /etc/projects and /etc/projid so xfs_quota works by name",
					Description: "Prints the lines; with --write, updates the files in place: lines for xfsq's IDs are replaced,\n" +
						"every other line is kept.",
					Flags: []cli.Flag{
						&cli.BoolFlag{Name: "write", Usage: "update the files instead of printing"},
						&cli.StringFlag{Name: "projects-file", Value: "/etc/projects"},
						&cli.StringFlag{Name: "projid-file", Value: "/etc/projid"},
					},
					Action: with(cmdExportXFS),
				}},
			},
			{
				Name: "doctor", Usage: "find drift between the store, the directories and the kernel; --fix repairs it",
				Description: "Reports interrupted adds and removals, missing directories, trees whose root lost its project ID,\n" +
					"limits changed behind xfsq's back, kernel IDs no project owns, directories no project owns, and\n" +
					"deletions journalled as pending whose process stopped before confirming them.\n" +
					"--fix repairs what it can, journalling each repair (doctor.repaired). Exit 1 while drift remains.",
				Flags:  []cli.Flag{&cli.BoolFlag{Name: "fix", Usage: "repair what can be repaired"}},
				Action: with(cmdDoctor),
			},
			{
				Name: "health", Usage: "is this host fit to run sandboxes? disk, cpu, memory, docker, quota, store",
				Description: "Each part answers on its own within --budget and carries its status (ok, warn, critical, error),\n" +
					"its figures and, on error, the error and a fix. Thresholds are the settings health_*.\n" +
					"Exit 1 when any part is critical or in error.",
				Flags:  []cli.Flag{durationFlag("budget", "2s", "time each part may take")},
				Action: with(cmdHealth),
			},
			serveCommand(with),
			tokenCommand(with),
		},
	}
	app.Commands = append(app.Commands, completionCommand())
	app.Commands = append(app.Commands, docCommands...)
	// The completion scripts ask the binary which words may follow.
	app.EnableBashCompletion = true
	setUsageErrors(app.Commands)
	wrapLeaves(app.Commands)
	app.OnUsageError = onUsageError
	// `xfsq nosuch`: an error like any other, so that --json makes it JSON.
	app.Action = func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usagef("unknown command %q: see xfsq --help", c.Args().First())
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

// docCommands are built in only with the man page generator (man.go).
var docCommands []*cli.Command

func onUsageError(c *cli.Context, err error, _ bool) error {
	if name := commandName(c); name != "" {
		return usagef("%v: see xfsq %s --help", err, name)
	}
	return usagef("%v: see xfsq --help", err)
}

func setUsageErrors(cmds []*cli.Command) {
	for _, c := range cmds {
		c.OnUsageError = onUsageError
		setUsageErrors(c.Subcommands)
		if len(c.Subcommands) > 0 && c.Action == nil {
			c.Action = func(c *cli.Context) error {
				if c.NArg() > 0 {
					return usagef("unknown command %q: see xfsq %s --help", c.Args().First(), commandName(c))
				}
				if c.Bool("json") {
					return usagef("%s needs a command: see xfsq %s --help", commandName(c), commandName(c))
				}
				cli.ShowSubcommandHelp(c)
				return &exitError{code: exitUsage}
			}
		}
	}
}

func table(w io.Writer, header string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

func cmdInit(e env) error {
	cfg, err := e.config()
	if err != nil {
		return err
	}
	cfg.Init = true
	cfg.Backend = e.c.String("backend")
	r, err := project.OpenRoot(e.c.Context, cfg)
	if err != nil {
		return err
	}
	defer r.Close()
	res := *r.Init
	return e.print(res, func(w io.Writer) {
		fmt.Fprintf(w, "root:    %s\nbackend: %s\n", res.Root, res.Backend)
		if res.Backend.Reason != "" {
			fmt.Fprintf(w, "         %s\n", res.Backend.Reason)
		}
		for _, n := range res.Notes {
			fmt.Fprintf(w, "note:    %s\n", n)
		}
		fmt.Fprintf(w, "store:   %s\n", res.Store)
		if len(res.Created) > 0 {
			fmt.Fprintf(w, "created: %s\n", strings.Join(res.Created, " "))
		} else {
			fmt.Fprintln(w, "created: nothing (already initialised)")
		}
	})
}

func cmdProjectAdd(e env) error {
	name, err := oneArg(e.c, "project NAME")
	if err != nil {
		return err
	}
	var o project.AddOptions
	if o.Workspace, err = limitFlags(e.c, ""); err != nil {
		return err
	}
	if o.Cache, err = limitFlags(e.c, "cache-"); err != nil {
		return err
	}
	if o.Scratch, err = limitFlags(e.c, "scratch-"); err != nil {
		return err
	}
	return e.manager(func(ctx context.Context, m *project.Manager) error {
		p, err := m.Add(ctx, name, o)
		if err != nil {
			return err
		}
		warnOverLimits(e, p)
		return e.print(p, func(w io.Writer) { printProject(w, p) })
	})
}

func cmdProjectSet(e env) error {
	name, err := oneArg(e.c, "project NAME")
	if err != nil {
		return err
	}
	change, err := limitFlags(e.c, "")
	if err != nil {
		return err
	}
	return e.manager(func(ctx context.Context, m *project.Manager) error {
		p, err := m.Set(ctx, name, e.c.String("area"), change)
		if err != nil {
			return err
		}
		warnOverLimits(e, p)
		return e.print(p, func(w io.Writer) { printProject(w, p) })
	})
}

func cmdProjectRm(e env) error {
	name, err := oneArg(e.c, "project NAME")
	if err != nil {
		return err
	}
	return e.manager(func(ctx context.Context, m *project.Manager) error {
		res, err := m.Remove(ctx, name, project.RemoveOptions{Purge: e.c.Bool("purge"), Force: e.c.Bool("force"), DryRun: e.c.Bool("dry-run")})
		if err != nil {
			return err
		}
		return e.print(res, func(w io.Writer) {
			if res.DryRun {
				fmt.Fprintf(w, "would remove project %q (dry run: nothing changed)\n", name)
				for _, p := range res.WouldPurge {
					fmt.Fprintf(w, "would delete %s: %s in %d files\n", p.Path, units.FormatIEC(p.Bytes), p.Inodes)
				}
				for _, l := range res.Left {
					fmt.Fprintf(w, "would keep on disk: %s\n", l)
				}
				if len(res.EndedLeases) > 0 {
					fmt.Fprintf(w, "would end the leases of run %s\n", strings.Join(res.EndedLeases, ", "))
				}
				return
			}
			fmt.Fprintf(w, "removed project %q\n", name)
			if res.Forced {
				fmt.Fprintf(w, "forced: ended the held leases of run %s\n", strings.Join(res.EndedLeases, ", "))
			} else if len(res.EndedLeases) > 0 {
				fmt.Fprintf(w, "ended the lapsed leases of run %s\n", strings.Join(res.EndedLeases, ", "))
			}
			for _, p := range res.PurgedTrees {
				fmt.Fprintf(w, "purged %s: %s removed, %s freed\n", safe(p.Path), plural(p.Entries, "entry", "entries"), units.FormatIEC(p.Bytes))
				for _, l := range p.Left {
					fmt.Fprintf(w, "left in place: %s (%s)\n", safe(l.Path), line(l.Reason))
				}
			}
			for _, l := range res.Left {
				fmt.Fprintf(w, "kept on disk: %s (delete it with --purge, or by hand)\n", safe(l))
			}
			for _, id := range res.KeptIDs {
				fmt.Fprintf(w, "project ID %s stays reserved until no file carries it\n", id)
			}
		})
	})
}

func cmdProjectList(e env) error {
	return e.manager(func(ctx context.Context, m *project.Manager) error {
		ps, err := m.List(ctx)
		if err != nil {
			return err
		}
		return e.print(ps, func(w io.Writer) {
			rows := make([][]string, len(ps))
			for i, p := range ps {
				rows[i] = []string{p.Name, p.State, when(p.CreatedAt)}
			}
			table(w, "PROJECT\tSTATE\tCREATED", rows)
		})
	})
}

func cmdProjectShow(e env) error {
	name, err := oneArg(e.c, "project NAME")
	if err != nil {
		return err
	}
	return e.manager(func(ctx context.Context, m *project.Manager) error {
		p, err := m.Show(ctx, name, readFlags(e))
		if err != nil {
			return err
		}
		return e.print(p, func(w io.Writer) { printProject(w, p) })
	})
}

func cmdProjectCheck(e env) error {
	name, err := oneArg(e.c, "project NAME")
	if err != nil {
		return err
	}
	return e.manager(func(ctx context.Context, m *project.Manager) error {
		a, err := m.Check(ctx, name, readFlags(e))
		if err != nil {
			return err
		}
		if e.json() {
			e.print(a, nil)
		} else if a.Decision == project.Ok {
			fmt.Fprintln(e.stdout, a.Message)
		} else {
			fmt.Fprintln(e.stderr, a.Decision+": "+a.Message)
		}
		if a.Decision == project.Deny {
			return &exitError{code: exitDenied}
		}
		return nil
	})
}

func dash(n uint64, format func(uint64) string) string {
	if n == 0 {
		return "-"
	}
	return format(n)
}

func count(n uint64) string { return fmt.Sprint(n) }

func treeRow(t project.TreeStatus, withProject bool) []string {
	row := []string{t.Area, fmt.Sprint(t.ProjectID), units.FormatIEC(t.UsedBytes), dash(t.BytesSoft, units.FormatIEC),
		dash(t.BytesHard, units.FormatIEC), count(t.UsedInodes), dash(t.InodesSoft, count), dash(t.InodesHard, count), "-"}
	if t.BytesHard > 0 {
		row[8] = fmt.Sprintf("%.1f%%", t.Percent)
	}
	if withProject {
		row = append([]string{t.Project}, row...)
	}
	return row
}

const treeHeader = "AREA\tID\tUSED\tSOFT\tHARD\tINODES\tISOFT\tIHARD\tUSE%"

func printProject(w io.Writer, p project.Project) {
	fmt.Fprintf(w, "project: %s (%s, created %s)\nbackend: %s\n", p.Name, p.State, when(p.CreatedAt), p.Backend)
	rows := make([][]string, len(p.Trees))
	for i, t := range p.Trees {
		rows[i] = treeRow(t, false)
	}
	table(w, treeHeader, rows)
	printDrift(w, p.Trees)
}

func printDrift(w io.Writer, trees []project.TreeStatus) {
	for _, t := range trees {
		if t.Drift != "" {
			fmt.Fprintf(w, "drift: %s %s: %s (xfsq doctor --fix)\n", t.Project, t.Area, t.Drift)
		}
	}
	now := time.Now()
	for _, t := range trees {
		for _, g := range []struct {
			what string
			ends *time.Time
		}{{"byte", t.BytesGraceEnds}, {"inode", t.InodesGraceEnds}} {
			switch {
			case g.ends == nil:
			case g.ends.After(now):
				fmt.Fprintf(w, "grace: %s %s: over its soft %s limit, grace ends %s\n", t.Project, t.Area, g.what, g.ends.Local().Format(time.RFC3339))
			default:
				fmt.Fprintf(w, "grace: %s %s: over its soft %s limit, grace ended %s (admission denies)\n", t.Project, t.Area, g.what, g.ends.Local().Format(time.RFC3339))
			}
		}
	}
}

func cmdReport(e env) error {
	f, err := reportFilterOf(e)
	if err != nil {
		return err
	}
	return e.manager(func(ctx context.Context, m *project.Manager) error {
		all, err := m.Report(ctx, readFlags(e))
		if err != nil {
			return err
		}
		rows, err := f.apply(all)
		if err != nil {
			return err
		}
		err = e.print(rows, func(w io.Writer) {
			if !f.noHeaders {
				fmt.Fprintf(w, "backend: %s\n", m.BackendName())
			}
			if !m.IsXFS() && !f.noHeaders {
				fmt.Fprintln(w, "note: the kernel enforces nothing here; usage is each tree's last walk plus the writes made through xfsq since.")
				var oldest time.Time
				for _, t := range rows {
					if t.UsageAsOf != nil && (oldest.IsZero() || t.UsageAsOf.Before(oldest)) {
						oldest = *t.UsageAsOf
					}
				}
				if !oldest.IsZero() {
					fmt.Fprintf(w, "      Other writes count from the next walk (oldest walk here: %s; the hourly xfsq snapshot --all\n"+
						"      walks every tree, --refresh walks them now).\n", when(oldest))
				}
			}
			if stale := reportTable(w, rows, f.noHeaders, useColour(os.Stdout)); stale && !f.noHeaders {
				fmt.Fprintf(w, "stale: walked over %s ago (the hourly xfsq snapshot --all has not run): writes made outside xfsq since\n"+
					"       are not counted; xfsq report --refresh, or xfsq top on the tree, walks it now.\n", roughAge(project.SnapshotInterval))
			}
			printDrift(w, rows)
			for _, t := range rows {
				if t.Escape != "" {
					fmt.Fprintf(w, "escape? %s %s: %s\n", safe(t.Project), t.Area, line(t.Escape))
				}
			}
			if u, ok := unowned(ctx, m); ok && !f.noHeaders {
				fmt.Fprintf(w, "unowned: %s of the %s df counts used is in no project (%s of it charged to project 0 or IDs that are no tree's)\n",
					units.FormatIEC(u.UnownedBytes), units.FormatIEC(u.UsedBytes), units.FormatIEC(u.OtherIDsBytes))
			}
		})
		if err != nil {
			return err
		}
		if f.check && anyAtHard(rows) {
			return &exitError{code: exitFailed}
		}
		return nil
	})
}

// usageAge says how old a row's figure is: "now" for the kernel's count,
// the age of the walk it starts from on the fallback, marked stale past
// the snapshot interval.
func usageAge(t project.TreeStatus) string {
	switch {
	case t.UsageAgeSeconds == nil && t.Stale:
		return "never walked (stale)"
	case t.UsageAgeSeconds == nil:
		return "now"
	}
	age := roughAge(time.Duration(*t.UsageAgeSeconds*float64(time.Second))) + " ago"
	if t.Stale {
		age += " (stale)"
	}
	return age
}

// roughAge is an age as a person reads it: 40s, 12m, 3h5m, 4d.
func roughAge(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

func cmdEvents(e env) error {
	q := project.EventQuery{Type: e.c.String("type"), Project: e.c.String("project"), Limit: e.c.Int("limit")}
	if s := e.c.String("since"); s != "" {
		t, err := project.ParseSince(s, time.Now())
		if err != nil {
			return usagef("--%v", err)
		}
		q.Since = t
	}
	if q.Limit < 1 {
		return usagef("--limit %d: use a positive number", q.Limit)
	}
	return e.manager(func(ctx context.Context, m *project.Manager) error {
		// A page is bounded; --limit is not, so the CLI follows the cursor.
		want, evs := q.Limit, []project.Event{}
		for {
			q.Limit = min(want-len(evs), project.MaxEventLimit)
			page, err := m.Events(ctx, q)
			if err != nil {
				return err
			}
			evs = append(evs, page.Events...)
			if page.Next == "" || len(evs) >= want {
				break
			}
			q.Cursor = page.Next
		}
		if e.c.Bool("follow") {
			return followEvents(ctx, e, m, q, evs)
		}
		return e.print(evs, func(w io.Writer) {
			for _, ev := range settledDeletions(evs) {
				fmt.Fprintln(w, eventLine(ev))
			}
		})
	})
}

func cmdSettingsList(e env) error {
	return e.manager(func(ctx context.Context, m *project.Manager) error {
		vals, err := m.Settings(ctx)
		if err != nil {
			return err
		}
		if err := e.print(vals, func(w io.Writer) {
			rows := make([][]string, len(vals))
			for i, v := range vals {
				value := humanSetting(v)
				if v.Problem != "" {
					value = "(refused: see below)"
				}
				rows[i] = []string{v.Key, value, v.Source, v.Help}
			}
			table(w, "KEY\tVALUE\tSOURCE\tMEANING", rows)
		}); err != nil {
			return err
		}
		// Every other setting is listed; the bad one fails the command (2).
		return project.SettingProblems(vals)
	})
}

func cmdSettingsReset(e env) error {
	key, err := oneArg(e.c, "KEY")
	if err != nil {
		return err
	}
	return e.manager(func(ctx context.Context, m *project.Manager) error {
		v, old, err := m.ResetSetting(ctx, key)
		if err != nil {
			return err
		}
		return e.print(v, func(w io.Writer) {
			fmt.Fprintf(w, "%s = %s from %s (was %s)\n", v.Key, humanSetting(v), v.Source, old)
		})
	})
}

func humanSetting(v settings.Value) string {
	switch v.Kind {
	case settings.Size:
		return units.FormatIEC(v.Bytes())
	case settings.Duration:
		// One unit system whatever was stored (older stores hold "2h0m0s").
		return units.FormatDuration(v.Duration())
	}
	return v.Value
}

func cmdSettingsGet(e env) error {
	key, err := oneArg(e.c, "KEY")
	if err != nil {
		return err
	}
	return e.manager(func(ctx context.Context, m *project.Manager) error {
		v, err := m.Setting(ctx, key)
		if err != nil {
			return err
		}
		return e.print(v, func(w io.Writer) { fmt.Fprintln(w, humanSetting(v)) })
	})
}

func cmdSettingsSet(e env) error {
	if e.c.NArg() != 2 {
		return usagef("settings set takes KEY VALUE, got %d arguments: see xfsq settings set --help", e.c.NArg())
	}
	return e.manager(func(ctx context.Context, m *project.Manager) error {
		v, old, err := m.SetSettingExplicit(ctx, e.c.Args().Get(0), e.c.Args().Get(1), e.c.Bool("allow-zero"))
		if err != nil {
			return err
		}
		return e.print(v, func(w io.Writer) {
			// old is "VALUE from SOURCE": the value in the form settings list prints.
			if val, src, ok := strings.Cut(old, " from "); ok {
				old = settingText(v.Key, val) + " from " + src
			}
			fmt.Fprintf(w, "%s = %s (was %s)\n", v.Key, humanSetting(v), line(old))
		})
	})
}

func cmdExportXFS(e env) error {
	return e.manager(func(ctx context.Context, m *project.Manager) error {
		var lines project.XFSProjects
		var err error
		if e.c.Bool("write") {
			lines, err = m.WriteXFSProjectFiles(ctx, e.c.String("projects-file"), e.c.String("projid-file"))
		} else {
			lines, err = m.ExportXFS(ctx)
		}
		if err != nil {
			return err
		}
		return e.print(lines, func(w io.Writer) {
			if e.c.Bool("write") {
				fmt.Fprintf(w, "updated %s (%s) and %s (%s)\n", e.c.String("projects-file"), plural(len(lines.Projects), "xfsq line", "xfsq lines"),
					e.c.String("projid-file"), plural(len(lines.Projid), "xfsq line", "xfsq lines"))
				return
			}
			fmt.Fprintf(w, "# %s\n%s\n# %s\n%s\n", e.c.String("projects-file"), strings.Join(lines.Projects, "\n"),
				e.c.String("projid-file"), strings.Join(lines.Projid, "\n"))
		})
	})
}

func cmdDoctor(e env) error {
	return e.manager(func(ctx context.Context, m *project.Manager) error {
		findings, err := m.Doctor(ctx, e.c.Bool("fix"))
		if err != nil {
			return err
		}
		if findings == nil {
			findings = []project.Finding{}
		}
		e.print(findings, func(w io.Writer) {
			if len(findings) == 0 {
				fmt.Fprintln(w, "no drift: store, directories and kernel agree")
			}
			for _, f := range findings {
				status := "found"
				switch {
				case f.Fixed:
					status = "fixed"
				case f.Error != "":
					status = "FIX FAILED: " + f.Error
				}
				where := strings.TrimSpace(strings.Join([]string{f.Project, f.Area, safe(f.Path)}, " "))
				fmt.Fprintf(w, "%s: %s %s: %s; fix: %s\n", line(status), f.Kind, where, line(f.Detail), line(f.Fix))
			}
		})
		if project.Unresolved(findings) {
			return &exitError{code: exitFailed}
		}
		return nil
	})
}

// refreshFlag asks a read for fresh figures: without it a read never walks.
func refreshFlag() cli.Flag {
	return &cli.BoolFlag{Name: "refresh", Usage: "on the fallback backend, walk the trees now rather than read their last walk"}
}

func readFlags(e env) project.Read { return project.Read{Refresh: e.c.Bool("refresh")} }

// areaUsage names the areas a flag takes.
var areaUsage = strings.Join(area.All, ", ") + " (inbound: the root's own tree, PROJECT " + project.RootOwner + ")"

func areaFlag() cli.Flag {
	return &cli.StringFlag{Name: "area", Value: area.Workspace, Usage: areaUsage}
}

// filesArgs reads PROJECT and PATH (PATH optional when optionalPath).
func filesArgs(e env, optionalPath bool) (string, string, error) {
	n := e.c.NArg()
	if n == 2 || (optionalPath && n == 1) {
		return e.c.Args().Get(0), e.c.Args().Get(1), nil
	}
	name := commandName(e.c)
	return "", "", usagef("%s takes PROJECT PATH, got %d arguments: see xfsq %s --help", name, n, name)
}

func withFiles(e env, fn func(ctx context.Context, l *files.Layer) error) error {
	return e.manager(func(ctx context.Context, m *project.Manager) error {
		l, err := files.New(ctx, m)
		if err != nil {
			return err
		}
		return fn(ctx, l)
	})
}

func cmdFilesLs(e env) error {
	name, p, err := filesArgs(e, true)
	if err != nil {
		return err
	}
	return withFiles(e, func(ctx context.Context, l *files.Layer) error {
		entries, err := l.List(ctx, name, e.c.String("area"), p)
		if err != nil {
			return err
		}
		return e.print(entries, func(w io.Writer) { filesTable(w, entries) })
	})
}

func cmdFilesGet(e env) error {
	name, p, err := filesArgs(e, false)
	if err != nil {
		return err
	}
	return withFiles(e, func(ctx context.Context, l *files.Layer) error {
		_, err := l.Get(ctx, name, e.c.String("area"), p, e.stdout)
		return err
	})
}

func cmdFilesPut(e env) error {
	name, p, err := filesArgs(e, false)
	if err != nil {
		return err
	}
	in := os.Stdin
	if from := e.c.String("from"); from != "" {
		root, err := e.root()
		if err != nil {
			return err
		}
		if in, err = openFrom(from, root, name, p); err != nil {
			return err
		}
		defer in.Close()
	}
	size := int64(-1) // a pipe: unknown until it ends
	if fi, err := in.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	return withFiles(e, func(ctx context.Context, l *files.Layer) error {
		res, err := l.Put(ctx, name, e.c.String("area"), p, in, size)
		if err != nil {
			return err
		}
		return e.print(res, func(w io.Writer) {
			verb := "wrote"
			if res.Replaced {
				verb = "replaced"
			}
			fmt.Fprintf(w, "%s %s (%s)\n", verb, safe(res.Path), units.FormatIEC(res.Bytes))
		})
	})
}

func cmdFilesRm(e env) error {
	name, p, err := filesArgs(e, false)
	if err != nil {
		return err
	}
	return withFiles(e, func(ctx context.Context, l *files.Layer) error {
		res, err := l.Remove(ctx, name, e.c.String("area"), p, files.RemoveOptions{Recursive: e.c.Bool("recursive")})
		if err != nil {
			return err
		}
		return e.print(res, func(w io.Writer) {
			fmt.Fprintf(w, "removed %s (%s in %s)\n", safe(res.Path), units.FormatIEC(res.Bytes), plural(res.Files, "file", "files"))
		})
	})
}

func growth(d *int64) string {
	switch {
	case d == nil:
		return "-"
	case *d < 0:
		return "-" + units.FormatIEC(uint64(-*d))
	}
	return "+" + units.FormatIEC(uint64(*d))
}

// isTerminal reports whether f is a terminal (for progress lines).
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// collectLess trades memory for time in a command that walks: a walk's
// garbage is short-lived names, and a collection during it takes a core
// from the walk. At 400 a snapshot of 1,000,000 files peaks at 18–19 MiB
// (docs/benchmarks.md). An operator's GOGC wins.
func collectLess() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}

func cmdSnapshot(e env) error {
	collectLess()
	budget, err := duration(e.c, "budget")
	if err != nil {
		return err
	}
	o := project.SnapshotOptions{Projects: e.c.Args().Slice(), Area: e.c.String("area"), Scheduled: e.c.Bool("all"),
		// The CLI runs nothing beside its walk: raw stats are safe here.
		Walk: inventory.Options{Depth: e.c.Int("depth"), TopK: e.c.Int("top"), Budget: budget, RawStat: true}}
	if len(o.Projects) == 0 && !o.Scheduled && o.Area == area.Inbound {
		o.Projects = []string{project.RootOwner} // the root's one inbound tree
	}
	switch {
	case len(o.Projects) == 0 && !o.Scheduled:
		return usagef("snapshot needs PROJECT names or --all: see xfsq snapshot --help")
	case len(o.Projects) > 0 && o.Scheduled:
		return usagef("snapshot takes PROJECT names or --all, not both")
	// 0 is the library's "default"; the CLI's flags have their own.
	case o.Walk.Depth == 0:
		return usagef("--depth 0: use 1 to %d", inventory.MaxDepth)
	case o.Walk.TopK == 0:
		return usagef("--top 0: use a positive number")
	}
	if err := o.Validate(); err != nil {
		return err
	}
	// Progress only for a person watching: stdout and stderr on a terminal, no --json.
	if e.watched() {
		o.Progress = func(p project.TreeProgress) { e.progress.show(walkProgress(p)) }
	}
	return e.manager(func(ctx context.Context, m *project.Manager) error {
		snaps, err := m.Snapshot(ctx, o)
		if err != nil {
			return err
		}
		failed := 0
		e.print(snaps, func(w io.Writer) { snapshotText(w, snaps) })
		for _, s := range snaps {
			if s.Error != "" {
				failed++
			}
		}
		if failed > 0 {
			return &exitError{code: exitFailed}
		}
		return nil
	})
}

func cmdTop(e env) error {
	collectLess()
	if n := e.c.NArg(); n < 1 || n > 2 {
		return usagef("top takes PROJECT [PATH], got %d arguments: see xfsq top --help", n)
	}
	name, sub := e.c.Args().Get(0), e.c.Args().Get(1)
	depth, limit, sortBy := e.c.Int("depth"), e.c.Int("limit"), e.c.String("sort")
	switch {
	case depth < 1 || depth > inventory.MaxDepth:
		return usagef("--depth %d: use 1 to %d", depth, inventory.MaxDepth)
	case limit < 1:
		return usagef("--limit %d: use a positive number", limit)
	case sortBy != "size" && sortBy != "files" && sortBy != "mtime":
		return usagef("--sort %q: use size, files or mtime", sortBy)
	}
	var progress func(project.TreeProgress)
	if e.watched() {
		progress = func(p project.TreeProgress) { e.progress.show(walkProgress(p)) }
	}
	return withFiles(e, func(ctx context.Context, l *files.Layer) error {
		res, err := l.Top(ctx, name, e.c.String("area"), sub, inventory.Options{Depth: depth, TopK: max(limit, 20), RawStat: true}, progress)
		if err != nil {
			return err
		}
		return e.print(res, func(w io.Writer) { topTable(w, res, sortBy, limit) })
	})
}

func leaseArgs(e env) (string, string, error) {
	if e.c.NArg() != 2 {
		name := commandName(e.c)
		return "", "", usagef("%s takes PROJECT RUN, got %d arguments: see xfsq %s --help", name, e.c.NArg(), name)
	}
	return e.c.Args().Get(0), e.c.Args().Get(1), nil
}

func cmdLeaseAcquire(e env) error {
	name, run, err := leaseArgs(e)
	if err != nil {
		return err
	}
	ttl, err := units.ParseDuration(e.c.String("ttl"))
	if err != nil {
		return usagef("--ttl: %v", err)
	}
	return e.manager(func(ctx context.Context, m *project.Manager) error {
		l, err := m.AcquireLease(ctx, name, run, ttl)
		if err != nil {
			return err
		}
		return e.print(l, func(w io.Writer) {
			fmt.Fprintf(w, "lease on %s for run %s until %s\n", name, run, when(l.ExpiresAt))
			if l.KeptLonger {
				fmt.Fprintf(w, "(it already held longer than --ttl %s: a renewal never shortens a lease; release it first to shorten it)\n", e.c.String("ttl"))
			}
		})
	})
}

func cmdLeaseRelease(e env) error {
	name, run, err := leaseArgs(e)
	if err != nil {
		return err
	}
	return e.manager(func(ctx context.Context, m *project.Manager) error {
		if err := m.ReleaseLease(ctx, name, run); err != nil {
			return err
		}
		return e.print(map[string]string{"project": name, "run": run, "released": "true"}, func(w io.Writer) {
			fmt.Fprintf(w, "released the lease of run %s on %s\n", run, name)
		})
	})
}

func cmdLeaseList(e env) error {
	return e.manager(func(ctx context.Context, m *project.Manager) error {
		ls, err := m.Leases(ctx)
		if err != nil {
			return err
		}
		return e.print(ls, func(w io.Writer) {
			rows := make([][]string, len(ls))
			for i, l := range ls {
				state := "held"
				if !l.Active {
					state = "lapsed"
				}
				rows[i] = []string{l.Project, l.Run, state, when(l.ExpiresAt)}
			}
			table(w, "PROJECT\tRUN\tSTATE\tUNTIL", rows)
		})
	})
}

func cmdSweep(e env) error {
	budget, err := duration(e.c, "budget")
	if err != nil {
		return err
	}
	o := project.SweepOptions{Background: true, Projects: e.c.Args().Slice(), DryRun: e.c.Bool("dry-run") || e.c.IsSet("plan-out"), Budget: budget}
	if a := e.c.String("area"); a != "" {
		o.Areas = strings.Split(a, ",")
	}
	if len(o.Projects) == 0 && !e.c.Bool("all") && !e.c.IsSet("apply") && slices.Equal(o.Areas, []string{area.Inbound}) {
		o.Projects = []string{project.RootOwner} // the root's one inbound tree, as --area inbound elsewhere
	}
	switch {
	case e.c.IsSet("apply") && (len(o.Projects) > 0 || e.c.Bool("all") || o.DryRun):
		return usagef("--apply FILE executes a saved plan: give no projects, --all, --dry-run or --plan-out with it")
	case !e.c.IsSet("apply") && len(o.Projects) == 0 && !e.c.Bool("all"):
		return usagef("sweep needs PROJECT names, --all, or --apply FILE: see xfsq sweep --help")
	case len(o.Projects) > 0 && e.c.Bool("all"):
		return usagef("sweep takes PROJECT names or --all, not both")
	}
	if f := e.c.String("apply"); f != "" {
		data, err := project.ReadPlanFile(f)
		if err != nil {
			return usagef("--apply: %v", err)
		}
		o.Apply = data
	}
	return e.manager(func(ctx context.Context, m *project.Manager) error {
		out, err := m.Sweep(ctx, o)
		// Some projects busy, others swept: say what was done, then why
		// the rest was not (the error, on stderr, with the exit code).
		var busy *project.SweepBusyError
		if err != nil && !(errors.As(err, &busy) && len(busy.Swept) > 0) {
			return err
		}
		if f := e.c.String("plan-out"); f != "" {
			if err := m.WritePlanFile(ctx, out.Plan, o.Areas, f); err != nil {
				return fmt.Errorf("--plan-out: %w", err)
			}
		}
		printErr := e.print(out, func(w io.Writer) {
			verb := "deleted"
			if out.DryRun {
				verb = "would delete"
			}
			fmt.Fprintf(w, "sweep %s: %s %s, %s\n", out.SweepID, verb, plural(len(out.Evicted), "entry", "entries"), units.FormatIEC(out.BytesFreed))
			if len(out.Evicted) > 0 {
				rows := make([][]string, len(out.Evicted))
				for i, d := range out.Evicted {
					rows[i] = []string{units.FormatIEC(d.Bytes), d.Policy, safe(d.Path), line(d.Reason)}
				}
				table(w, "SIZE\tPOLICY\tPATH\tREASON", rows)
			}
			if len(out.Skipped) > 0 {
				fmt.Fprintln(w, "left alone:")
				for _, s := range out.Skipped {
					fmt.Fprintf(w, "  %s: %s\n", safe(s.Path), line(s.Reason))
				}
			}
			for _, o := range out.OverSoft {
				fmt.Fprintf(w, "over its soft limit: %s %s (%s of %s)\n", o.Project, o.Area, units.FormatIEC(o.Bytes), units.FormatIEC(o.Soft))
			}
			if f := e.c.String("plan-out"); f != "" {
				fmt.Fprintf(w, "plan saved to %s: review it, then run xfsq sweep --apply %s\n", f, f)
			}
		})
		return cmp.Or(printErr, err)
	})
}

// unowned is the report's footer figure; a failure to read it costs the
// report nothing but the line.
func unowned(ctx context.Context, m *project.Manager) (project.Unowned, bool) {
	u, ok, err := m.Unowned(ctx)
	return u, ok && err == nil
}
