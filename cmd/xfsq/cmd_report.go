package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliargs"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/reportcols"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/textout"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/units"
)

func reportProjectFlag() cli.Flag {
	return &cli.StringFlag{Name: "project", Usage: "only these projects (comma-separated)"}
}

func reportAreaFlag() cli.Flag {
	return &cli.StringFlag{Name: "area", Usage: "only these areas (comma-separated: " + strings.Join(area.All, ", ") + ")"}
}

// reportView is how a command line asks to see the report: headers and
// notes or rows only, and which columns (nil: the default).
type reportView struct {
	noHeaders bool
	columns   []string
}

// reportOptions are the report a command line asks for, and how to show it.
func reportOptions(e env) (o sandbox.ReportOptions, v reportView, err error) {
	if e.c.NArg() > 0 {
		return o, v, cliargs.Usagef("report takes no arguments, got %q: filter with --project NAME", e.c.Args().First())
	}
	sortBy, err := cliargs.ParseSort(e.c.String("sort"), "report", cliargs.ReportSorts)
	if err != nil {
		return o, v, err
	}
	o = sandbox.ReportOptions{Projects: cliargs.SplitList(e.c.String("project")), Areas: cliargs.SplitList(e.c.String("area")),
		Sort: coreSort[sortBy], Check: e.c.Bool("check"), Read: cliargs.ReadFlags(e.c)}
	if e.c.IsSet("over") {
		over := e.c.Float64("over")
		o.Over = &over
	}
	v = reportView{noHeaders: e.c.Bool("no-headers")}
	if v.columns, err = reportcols.Parse(e.c.String("columns"), e.c.Bool("wide")); err != nil {
		return o, v, err
	}
	return o, v, sandbox.CheckReport(o)
}

// coreSort is the library's order for each word of --sort.
var coreSort = map[string]string{"name": sandbox.ReportByProject, "size": sandbox.ReportByUsed, "files": sandbox.ReportByFiles,
	"mtime": sandbox.ReportByActivity, "percent": sandbox.ReportByPercent, "growth": sandbox.ReportByGrowth,
	"eta": sandbox.ReportByFullIn, "reclaimable": sandbox.ReportByReclaimable}

// reportTable prints one row per tree, of the columns asked for (nil: the
// default), and says whether any of them is stale; on a terminal, a tree
// at its hard limit is red and one over its soft limit yellow.
func reportTable(w io.Writer, rows []sandbox.TreeStatus, columns []string, noHeaders, colour bool) (stale bool) {
	now := time.Now()
	cols := reportcols.For(columns, rows)
	out := make([][]string, len(rows))
	for i, t := range rows {
		stale = stale || t.Stale
		out[i] = make([]string, len(cols))
		for j, c := range cols {
			out[i][j] = c.Value(t, now)
		}
	}
	var headers []string
	for _, c := range cols {
		headers = append(headers, c.Header)
	}
	header := strings.Join(headers, "\t")
	if noHeaders {
		header = ""
	}
	var b strings.Builder
	textout.Table(&b, header, out)
	lines := strings.SplitAfter(b.String(), "\n")
	if noHeaders {
		lines = lines[1:] // the empty header line
	} else {
		fmt.Fprint(w, lines[0])
		lines = lines[1:]
	}
	// Colour after alignment: escape codes would count as width.
	for i, l := range lines {
		if i < len(rows) {
			switch {
			case sandbox.AtHardLimit(rows[i]):
				l = textout.Paint(colour, "31", strings.TrimSuffix(l, "\n")) + "\n"
			case sandbox.OverSoftLimit(rows[i]):
				l = textout.Paint(colour, "33", strings.TrimSuffix(l, "\n")) + "\n"
			}
		}
		fmt.Fprint(w, l)
	}
	return stale
}

func reportCommand(with withEnv) *cli.Command {
	return &cli.Command{
		Name: "report", Usage: "usage and limits of every tree",
		Description: "One row per tree: project, area, used, hard limit, percent of it, how long its soft limit's grace\n" +
			"has left, growth over 24 h and when it will be full at its trend (FULL IN: a least-squares trend of\n" +
			"two days of snapshots, see docs/operations.md#full-in), and on the fallback how old the figure is.\n" +
			"--wide shows every column (ID, soft limit, inodes, 7 d growth, what the sweep policies would free,\n" +
			"last activity); -o picks them (-o project,area,used,eta). --json prints an array of objects with\n" +
			"every figure. --sort uses the words top uses: name, size, files, mtime, percent, growth, eta,\n" +
			"reclaimable (project and used are still taken for name and size).\n\n" +
			"On XFS, usage is the kernel's count, read in one pass. On the fallback backend it is each tree's\n" +
			"last walk plus the writes made through xfsq since (usage_walked_at says when that walk began); the\n" +
			"hourly pass (xfsq snapshot --all) walks them again. --refresh walks every tree now.\n\n" +
			"GRACE says when a soft limit's grace ends (or ended). --check exits 1 when any tree shown is at\n" +
			"or over a hard limit (bytes or inodes), for a cron job or a monitor. Colour only on a terminal,\n" +
			"never with NO_COLOR set.",
		Flags: []cli.Flag{cliargs.RefreshFlag(), reportProjectFlag(), reportAreaFlag(),
			&cli.Float64Flag{Name: "over", Usage: "only trees at or over PERCENT of their hard byte limit"},
			&cli.StringFlag{Name: "sort", Value: "name", Usage: cliargs.SortUsage(cliargs.ReportSorts)},
			&cli.BoolFlag{Name: "wide", Usage: "every column (as -o wide)"},
			&cli.StringFlag{Name: "columns", Aliases: []string{"o"}, Usage: "the columns to show, comma-separated (" + strings.Join(reportcols.Names(), ",") + "), or wide"},
			&cli.BoolFlag{Name: "no-headers", Aliases: []string{"N"}, Usage: "no header or notes, rows only (as xfs_quota -N)"},
			&cli.BoolFlag{Name: "check", Usage: "exit 1 when any tree shown is at or over a hard limit"},
			onHostFlag(), allHostsFlag()},
		Action: with(reads(cmdReport)),
	}
}

func cmdReport(e env) error {
	if fleetAsked(e) {
		return cmdReportFleet(e)
	}
	o, view, err := reportOptions(e)
	if err != nil {
		return err
	}
	noHeaders, columns := view.noHeaders, view.columns
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		res, err := m.ReportOf(ctx, o)
		if err != nil {
			return err
		}
		rows := res.Trees
		err = e.print(rows, func(w io.Writer) {
			if !noHeaders {
				fmt.Fprintf(w, "backend: %s\n", m.BackendName())
			}
			if !m.IsXFS() && !noHeaders {
				fmt.Fprintln(w, "note: the kernel enforces nothing here; usage is each tree's\n"+
					"      last walk plus the writes made through xfsq since.")
				if res.OldestWalkAt != nil {
					fmt.Fprintf(w, "      Other writes count from the next walk (oldest walk here: %s;\n"+
						"      the hourly xfsq snapshot --all walks every tree, --refresh walks them now).\n", textout.When(*res.OldestWalkAt))
				}
			}
			if stale := reportTable(w, rows, columns, noHeaders, textout.UseColour(os.Stdout)); stale && !noHeaders {
				fmt.Fprintf(w, "stale: walked over %s ago (the hourly xfsq snapshot --all has not run): writes made\n"+
					"       outside xfsq since are not counted; xfsq report --refresh, or xfsq top on the tree,\n"+
					"       walks it now.\n", textout.RoughAge(sandbox.SnapshotInterval))
			}
			printDrift(w, rows)
			for _, t := range rows {
				if t.Escape != "" {
					fmt.Fprintf(w, "escape? %s %s: %s\n", textout.Safe(t.Project), t.Area, textout.Line(t.Escape))
				}
			}
			if !noHeaders {
				promiseLine(w, res)
			}
			if u := res.Unowned; u != nil && !noHeaders {
				fmt.Fprintf(w, "unowned: %s of the %s df counts used is in no project (%s of it charged to project 0 or IDs that are no tree's)\n",
					units.FormatIEC(u.UnownedBytes), units.FormatIEC(u.UsedBytes), units.FormatIEC(u.OtherIDsBytes))
			}
		})
		if err != nil {
			return err
		}
		if res.CheckFailed {
			return &cliargs.ExitError{Code: exitFailed}
		}
		return nil
	})
}

// promiseLine says what the limits of the trees shown promise of the disk
// and what the sweep policies would free in them, as docker system df and
// an Incus pool say them: the report's figures, worded.
func promiseLine(w io.Writer, res sandbox.ReportResult) {
	p := res.Promise
	if p == nil {
		return
	}
	s := fmt.Sprintf("promised: %s of hard limits on a %s disk (%.2fx)", units.FormatIEC(p.PromisedBytes), units.FormatIEC(p.DiskBytes), p.OvercommitRatio)
	if p.UnlimitedTrees > 0 {
		s += fmt.Sprintf(", and %s with no limit", textout.Plural(p.UnlimitedTrees, "tree", "trees"))
	}
	if r := res.ReclaimableBytes; r != nil {
		s += "; reclaimable by the sweep policies: " + units.FormatIEC(*r) + " (as last planned)"
	}
	fmt.Fprintln(w, s)
}
