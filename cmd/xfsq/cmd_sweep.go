package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliargs"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/textout"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/units"
)

func sweepCommand(with withEnv) *cli.Command {
	return &cli.Command{
		Name: "sweep", Usage: "delete what the retention policies name, journalling every deletion", ArgsUsage: "[PROJECT…]",
		Description: "Plans, then deletes: the quota check (storage.quota_exceeded for trees over their soft limit), then\n" +
			"caches over cache_quota_per_project (least recently used top-level entries, never one used within\n" +
			"cache_min_age), workspace trash (workspace_trash_globs older than workspace_trash_age), scratch of\n" +
			"finished runs older than scratch_ttl, and the root's inbound/ (PROJECT " + sandbox.RootOwner + ", --area inbound):\n" +
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
			&cli.StringFlag{Name: "area", Usage: "comma-separated areas: cache,workspace,scratch,inbound (default all; inbound is " + sandbox.RootOwner + "'s)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "plan and print, delete nothing"},
			&cli.StringFlag{Name: "plan-out", Usage: "save the plan to FILE (implies --dry-run)"},
			&cli.StringFlag{Name: "apply", Usage: "execute the plan --plan-out saved in FILE, once: refused if edited, older than plan_max_age, " +
				"or made for another root, host or settings; each entry is decided again and re-checked"},
			cliargs.DurationFlag("budget", "", "stop deleting after this long (0: no limit)"),
		},
		Action: with(frees(cmdSweep)),
	}
}

func cmdSweep(e env) error {
	budget, err := cliargs.Duration(e.c, "budget")
	if err != nil {
		return err
	}
	o := sandbox.SweepOptions{Background: true, Projects: e.c.Args().Slice(), DryRun: e.c.Bool("dry-run") || e.c.IsSet("plan-out"), Keep: e.c.IsSet("plan-out"), Budget: budget}
	if a := e.c.String("area"); a != "" {
		o.Areas = strings.Split(a, ",")
	}
	if len(o.Projects) == 0 && !e.c.Bool("all") && !e.c.IsSet("apply") {
		o.Projects = sandbox.ImpliedProjects(o.Areas)
	}
	switch {
	case e.c.IsSet("apply") && (len(o.Projects) > 0 || e.c.Bool("all") || o.DryRun):
		return cliargs.Usagef("--apply FILE executes a saved plan: give no projects, --all, --dry-run or --plan-out with it")
	case !e.c.IsSet("apply") && len(o.Projects) == 0 && !e.c.Bool("all"):
		return cliargs.Usagef("sweep needs PROJECT names, --all, or --apply FILE: see xfsq sweep --help")
	case len(o.Projects) > 0 && e.c.Bool("all"):
		return cliargs.Usagef("sweep takes PROJECT names or --all, not both")
	}
	if f := e.c.String("apply"); f != "" {
		plan, err := sandbox.ReadPlanFile(f)
		if err != nil {
			return cliargs.Usagef("--apply: %v", err)
		}
		o.Apply = plan
	}
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		out, err := m.Sweep(ctx, o)
		if err != nil {
			return err
		}
		// Some projects busy, others swept: say what was done, then why
		// the rest was not (the error, on stderr, with the exit code).
		busy := out.BusyError()
		if busy != nil && len(out.Swept) == 0 {
			return busy
		}
		if f := e.c.String("plan-out"); f != "" {
			if err := out.Kept.WriteFile(f); err != nil {
				return fmt.Errorf("--plan-out: %w", err)
			}
		}
		printErr := e.print(out, func(w io.Writer) {
			verb := "deleted"
			if out.DryRun {
				verb = "would delete"
			}
			fmt.Fprintf(w, "sweep %s: %s %s, %s\n", out.SweepID, verb, textout.Plural(len(out.Evicted), "entry", "entries"), units.FormatIEC(out.BytesFreed))
			if len(out.Evicted) > 0 {
				rows := make([][]string, len(out.Evicted))
				for i, d := range out.Evicted {
					rows[i] = []string{units.FormatIEC(d.Bytes), d.Policy, textout.Safe(d.Path), textout.Line(d.Reason)}
				}
				textout.Table(w, "SIZE\tPOLICY\tPATH\tREASON", rows)
			}
			if len(out.Skipped) > 0 {
				fmt.Fprintln(w, "left alone:")
				for _, s := range out.Skipped {
					fmt.Fprintf(w, "  %s: %s\n", textout.Safe(s.Path), textout.Line(s.Reason))
				}
			}
			for _, o := range out.OverSoft {
				fmt.Fprintf(w, "over its soft limit: %s %s (%s of %s)\n", o.Project, o.Area, units.FormatIEC(o.Bytes), units.FormatIEC(o.Soft))
			}
			if f := e.c.String("plan-out"); f != "" {
				fmt.Fprintf(w, "plan saved to %s: review it, then run xfsq sweep --apply %s\n", f, f)
			}
		})
		return cmp.Or(printErr, busy)
	})
}
