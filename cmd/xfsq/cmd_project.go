package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliargs"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/textout"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/units"
)

func projectCommand(with withEnv) *cli.Command {
	return &cli.Command{
		Name:  "project",
		Usage: "add, change, remove and inspect projects",
		Subcommands: []*cli.Command{
			{
				Name: "add", Usage: "register a project: its trees, project IDs and limits", ArgsUsage: "NAME",
				Description: "Creates projects/NAME/{uploads,inbox}, cache/NAME and scratch/NAME (where its runs keep\n" +
					"scratch/NAME/RUN), gives each tree its own project ID and limits, and journals project.added.\n" +
					"NAME: " + sandbox.NameRule + ".\n" +
					"The workspace hard limit defaults to the setting default_quota (50GiB, or\n" +
					"KERNEL_STORAGE_DEFAULT_QUOTA_BYTES), the cache's to default_cache_quota, the scratch's\n" +
					"(shared by all runs of the project) to default_scratch_quota.",
				Flags:  append(append(append(limitFlagSet("", "workspace"), limitFlagSet("cache-", "cache")...), limitFlagSet("scratch-", "scratch")...), cliargs.ForceFlag()),
				Action: with(cmdProjectAdd),
			},
			{
				Name: "set", Usage: "change the limits of one tree of a project", ArgsUsage: "NAME",
				Flags: append(limitFlagSet("", "new"),
					&cli.StringFlag{Name: "area", Value: area.Workspace, Usage: cliargs.AreaUsage}, cliargs.ForceFlag()),
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
				Action: with(frees(cmdProjectRm)),
			},
			{Name: "list", Usage: "list projects", Action: with(reads(cmdProjectList))},
			{Name: "show", Usage: "a project's trees, IDs, usage and limits", ArgsUsage: "NAME", Action: with(reads(cmdProjectShow)),
				Description: "On the fallback backend usage is each tree's last walk plus the writes made through xfsq since\n" +
					"(usage_walked_at says when that walk began); --refresh walks the trees now.",
				Flags: []cli.Flag{cliargs.RefreshFlag()}},
			{
				Name: "check", Usage: "may a run of the project start? ok, warn or deny", ArgsUsage: "NAME",
				Description: "Exit 0 for ok and for warn (over a soft limit within grace; the warning goes to stderr),\n" +
					"3 for deny (at or over a hard limit, or over a soft limit past its grace).\n" +
					"On the fallback backend it reads the trees' last walk plus xfsq's writes since, and walks\n" +
					"nothing, so that a check before every run stays cheap; --refresh walks them first.",
				Flags:  []cli.Flag{cliargs.RefreshFlag()},
				Action: with(cmdProjectCheck),
			},
		},
	}
}

func limitFlagSet(prefix, what string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: prefix + "bytes-soft", Usage: what + " soft byte limit (SIZE; 0: no limit, as xfs_quota)"},
		&cli.StringFlag{Name: prefix + "bytes-hard", Usage: what + " hard byte limit (SIZE; 0: no limit, as xfs_quota)"},
		&cli.StringFlag{Name: prefix + "inodes-soft", Usage: what + " soft file-count limit (0: no limit)"},
		&cli.StringFlag{Name: prefix + "inodes-hard", Usage: what + " hard file-count limit (0: no limit)"},
	}
}

func cmdProjectAdd(e env) error {
	name, err := cliargs.OneArg(e.c, "project NAME")
	if err != nil {
		return err
	}
	var o sandbox.AddOptions
	if o.Workspace, err = cliargs.LimitFlags(e.c, ""); err != nil {
		return err
	}
	if o.Cache, err = cliargs.LimitFlags(e.c, "cache-"); err != nil {
		return err
	}
	if o.Scratch, err = cliargs.LimitFlags(e.c, "scratch-"); err != nil {
		return err
	}
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		p, err := m.Add(ctx, name, o)
		if err != nil {
			return err
		}
		warnOverLimits(e, p)
		return e.print(p, func(w io.Writer) { printProject(w, p, m.BackendName()) })
	})
}

func cmdProjectSet(e env) error {
	name, err := cliargs.OneArg(e.c, "project NAME")
	if err != nil {
		return err
	}
	change, err := cliargs.LimitFlags(e.c, "")
	if err != nil {
		return err
	}
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		p, err := m.Set(ctx, name, e.c.String("area"), change)
		if err != nil {
			return err
		}
		warnOverLimits(e, p)
		return e.print(p, func(w io.Writer) { printProject(w, p, m.BackendName()) })
	})
}

func cmdProjectRm(e env) error {
	name, err := cliargs.OneArg(e.c, "project NAME")
	if err != nil {
		return err
	}
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		res, err := m.Remove(ctx, name, sandbox.RemoveOptions{Purge: e.c.Bool("purge"), Force: e.c.Bool("force"), DryRun: e.c.Bool("dry-run")})
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
				fmt.Fprintf(w, "purged %s: %s removed, %s freed\n", textout.Safe(p.Path), textout.Plural(p.RemovedEntries, "entry", "entries"), units.FormatIEC(p.FreedBytes))
				for _, l := range p.Left {
					fmt.Fprintf(w, "left in place: %s (%s)\n", textout.Safe(l.Path), textout.Line(l.Reason))
				}
			}
			for _, l := range res.Left {
				fmt.Fprintf(w, "kept on disk: %s (delete it with --purge, or by hand)\n", textout.Safe(l))
			}
			for _, id := range res.KeptIDs {
				fmt.Fprintf(w, "project ID %s stays reserved until no file carries it\n", id)
			}
		})
	})
}

func cmdProjectList(e env) error {
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		ps, err := m.List(ctx)
		if err != nil {
			return err
		}
		return e.print(ps, func(w io.Writer) {
			rows := make([][]string, len(ps))
			for i, p := range ps {
				rows[i] = []string{p.Name, p.State, textout.When(p.CreatedAt)}
			}
			textout.Table(w, "PROJECT\tSTATE\tCREATED", rows)
		})
	})
}

func cmdProjectShow(e env) error {
	name, err := cliargs.OneArg(e.c, "project NAME")
	if err != nil {
		return err
	}
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		p, err := m.Show(ctx, name, cliargs.ReadFlags(e.c))
		if err != nil {
			return err
		}
		return e.print(p, func(w io.Writer) { printProject(w, p, m.BackendName()) })
	})
}

func cmdProjectCheck(e env) error {
	name, err := cliargs.OneArg(e.c, "project NAME")
	if err != nil {
		return err
	}
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		a, err := m.Check(ctx, name, cliargs.ReadFlags(e.c))
		if err != nil {
			return err
		}
		if e.json() {
			e.print(a, nil)
		} else if a.Decision == sandbox.Ok {
			fmt.Fprintln(e.stdout, a.Message)
		} else {
			fmt.Fprintln(e.stderr, string(a.Decision)+": "+a.Message)
		}
		if a.Decision == sandbox.Deny {
			return &cliargs.ExitError{Code: exitDenied}
		}
		return nil
	})
}

func treeRow(t sandbox.TreeStatus, withProject bool) []string {
	row := []string{t.Area, fmt.Sprint(t.ProjectID), units.FormatIEC(t.UsedBytes), textout.Dash(t.BytesSoft, units.FormatIEC),
		textout.Dash(t.BytesHard, units.FormatIEC), textout.Count(t.UsedInodes), textout.Dash(t.InodesSoft, textout.Count), textout.Dash(t.InodesHard, textout.Count), "-"}
	if t.BytesHard > 0 {
		row[8] = fmt.Sprintf("%.1f%%", t.Percent)
	}
	if withProject {
		row = append([]string{t.Project}, row...)
	}
	return row
}

const treeHeader = "AREA\tID\tUSED\tSOFT\tHARD\tINODES\tISOFT\tIHARD\tUSE%"

// printProject prints p; backend is the root's backend in one line (its
// BackendName), which the answer's backend object does not carry.
func printProject(w io.Writer, p sandbox.Project, backend string) {
	fmt.Fprintf(w, "project: %s (%s, created %s)\nbackend: %s\n", p.Name, p.State, textout.When(p.CreatedAt), backend)
	rows := make([][]string, len(p.Trees))
	for i, t := range p.Trees {
		rows[i] = treeRow(t, false)
	}
	textout.Table(w, treeHeader, rows)
	printDrift(w, p.Trees)
}

func printDrift(w io.Writer, trees []sandbox.TreeStatus) {
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
		}{{"byte", t.BytesGraceEndsAt}, {"inode", t.InodesGraceEndsAt}} {
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

// warnOverLimits says the library's warnings about limits the trees
// already pass, on stderr: the change stands.
func warnOverLimits(e env, p sandbox.Project) {
	for _, w := range p.Warnings {
		what, format := "byte", units.FormatIEC
		if w.Resource == sandbox.LimitInodes {
			what, format = "file-count", textout.Count
		}
		fmt.Fprintf(e.stderr, "xfsq: warning: %s %s already holds %s, at or over its new %s %s limit of %s: %s\n",
			w.Project, w.Area, format(w.Used), w.Kind, what, format(w.Limit), consequence[w.Kind])
	}
}

var consequence = map[string]string{
	"hard": "writes to it are refused until it shrinks below the limit",
	"soft": "project check warns, and denies once the grace ends",
}
