package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/units"
)

func reportProjectFlag() cli.Flag {
	return &cli.StringFlag{Name: "project", Usage: "only these projects (comma-separated)"}
}

func reportAreaFlag() cli.Flag {
	return &cli.StringFlag{Name: "area", Usage: "only these areas (comma-separated: " + strings.Join(area.All, ", ") + ")"}
}

// reportFilter is what of the report a command line asks to see.
type reportFilter struct {
	projects, areas []string
	over            float64
	overSet         bool
	sortBy          string
	noHeaders       bool
	check           bool
	columns         []string // nil: the default
}

func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func reportFilterOf(e env) (reportFilter, error) {
	f := reportFilter{projects: splitList(e.c.String("project")), areas: splitList(e.c.String("area")),
		over: e.c.Float64("over"), overSet: e.c.IsSet("over"), sortBy: e.c.String("sort"),
		noHeaders: e.c.Bool("no-headers"), check: e.c.Bool("check")}
	if e.c.NArg() > 0 {
		return f, usagef("report takes no arguments, got %q: filter with --project NAME", e.c.Args().First())
	}
	for _, a := range f.areas {
		if err := sandbox.ValidateArea(a); err != nil {
			return f, usagef("--area: %v", err)
		}
	}
	if f.overSet && (f.over < 0 || f.over != f.over) {
		return f, usagef("--over %v: use a percentage, 0 or more (e.g. 90)", f.over)
	}
	var err error
	if f.sortBy, err = parseSort(f.sortBy, "report", reportSorts); err != nil {
		return f, err
	}
	f.columns, err = parseColumns(e.c.String("columns"), e.c.Bool("wide"))
	return f, err
}

// apply keeps the rows asked for, in the order asked for. A project named
// that has no row is an error: a typo must not read as "all is well".
func (f reportFilter) apply(rows []sandbox.TreeStatus) ([]sandbox.TreeStatus, error) {
	for _, p := range f.projects {
		if !slices.ContainsFunc(rows, func(t sandbox.TreeStatus) bool { return t.Project == p }) {
			return nil, usagef("--project %s: no such project (xfsq project list names them)", safe(p))
		}
	}
	out := []sandbox.TreeStatus{}
	for _, t := range rows {
		switch {
		case len(f.projects) > 0 && !slices.Contains(f.projects, t.Project):
		case len(f.areas) > 0 && !slices.Contains(f.areas, t.Area):
		case f.overSet && (t.BytesHard == 0 || t.Percent < f.over):
		default:
			out = append(out, t)
		}
	}
	growth := func(t sandbox.TreeStatus) int64 {
		if t.Growth24h == nil {
			return -1 << 62
		}
		return *t.Growth24h
	}
	slices.SortStableFunc(out, func(a, b sandbox.TreeStatus) int {
		switch f.sortBy {
		case "size":
			return cmpDesc(a.UsedBytes, b.UsedBytes)
		case "files":
			return cmpDesc(a.UsedInodes, b.UsedInodes)
		case "mtime":
			return cmpDesc(unixOr(a.LastActivityAt), unixOr(b.LastActivityAt))
		case "percent":
			return cmpDesc(a.Percent, b.Percent)
		case "growth":
			return cmpDesc(growth(a), growth(b))
		case "eta":
			return cmpDesc(-etaOr(a.FullInSeconds), -etaOr(b.FullInSeconds))
		case "reclaimable":
			return cmpDesc(valueOr(a.ReclaimableBytes), valueOr(b.ReclaimableBytes))
		}
		if c := strings.Compare(a.Project, b.Project); c != 0 {
			return c
		}
		return strings.Compare(a.Area, b.Area)
	})
	return out, nil
}

func cmpDesc[T int64 | uint64 | float64](a, b T) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// atHard reports whether a tree is at or over one of its hard limits.
func atHard(t sandbox.TreeStatus) bool {
	return (t.BytesHard > 0 && t.UsedBytes >= t.BytesHard) || (t.InodesHard > 0 && t.UsedInodes >= t.InodesHard)
}

func overSoft(t sandbox.TreeStatus) bool {
	return (t.BytesSoft > 0 && t.UsedBytes > t.BytesSoft) || (t.InodesSoft > 0 && t.UsedInodes > t.InodesSoft)
}

func anyAtHard(rows []sandbox.TreeStatus) bool { return slices.ContainsFunc(rows, atHard) }

// unixOr is t in Unix seconds, or the earliest of all when unknown.
func unixOr(t *time.Time) int64 {
	if t == nil {
		return -1 << 62
	}
	return t.Unix()
}

// etaOr is a full-in, or longer than any when not filling.
func etaOr(s *float64) float64 {
	if s == nil {
		return 1e300
	}
	return *s
}

func valueOr(n *uint64) uint64 {
	if n == nil {
		return 0
	}
	return *n
}

// graceText says when the first running soft-limit grace of a tree ends,
// as a span: "6d left", "ended 2h ago".
func graceText(t sandbox.TreeStatus, now time.Time) string {
	var ends *time.Time
	for _, g := range []*time.Time{t.BytesGraceEnds, t.InodesGraceEnds} {
		if g != nil && (ends == nil || g.Before(*ends)) {
			ends = g
		}
	}
	switch {
	case ends == nil:
		return "-"
	case !ends.After(now):
		return "ended " + shortDuration(now.Sub(*ends)) + " ago"
	}
	return shortDuration(ends.Sub(now)) + " left"
}

// reportTable prints one row per tree, of the columns asked for (nil: the
// default), and says whether any of them is stale; on a terminal, a tree
// at its hard limit is red and one over its soft limit yellow.
func reportTable(w io.Writer, rows []sandbox.TreeStatus, columns []string, noHeaders, colour bool) (stale bool) {
	now := time.Now()
	cols := columnsFor(columns, rows)
	out := make([][]string, len(rows))
	for i, t := range rows {
		stale = stale || t.Stale
		out[i] = make([]string, len(cols))
		for j, c := range cols {
			out[i][j] = c.value(t, now)
		}
	}
	var headers []string
	for _, c := range cols {
		headers = append(headers, c.header)
	}
	header := strings.Join(headers, "\t")
	if noHeaders {
		header = ""
	}
	var b strings.Builder
	table(&b, header, out)
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
			case atHard(rows[i]):
				l = paint(colour, "31", strings.TrimSuffix(l, "\n")) + "\n"
			case overSoft(rows[i]):
				l = paint(colour, "33", strings.TrimSuffix(l, "\n")) + "\n"
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
		Flags: []cli.Flag{refreshFlag(), reportProjectFlag(), reportAreaFlag(),
			&cli.Float64Flag{Name: "over", Usage: "only trees at or over PERCENT of their hard byte limit"},
			&cli.StringFlag{Name: "sort", Value: "name", Usage: sortUsage(reportSorts)},
			&cli.BoolFlag{Name: "wide", Usage: "every column (as -o wide)"},
			&cli.StringFlag{Name: "columns", Aliases: []string{"o"}, Usage: "the columns to show, comma-separated (" + strings.Join(reportColumnNames(), ",") + "), or wide"},
			&cli.BoolFlag{Name: "no-headers", Aliases: []string{"N"}, Usage: "no header or notes, rows only (as xfs_quota -N)"},
			&cli.BoolFlag{Name: "check", Usage: "exit 1 when any tree shown is at or over a hard limit"}},
		Action: with(reads(cmdReport)),
	}
}

func cmdReport(e env) error {
	f, err := reportFilterOf(e)
	if err != nil {
		return err
	}
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
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
				fmt.Fprintln(w, "note: the kernel enforces nothing here; usage is each tree's\n"+
					"      last walk plus the writes made through xfsq since.")
				var oldest time.Time
				for _, t := range rows {
					if t.UsageAsOf != nil && (oldest.IsZero() || t.UsageAsOf.Before(oldest)) {
						oldest = *t.UsageAsOf
					}
				}
				if !oldest.IsZero() {
					fmt.Fprintf(w, "      Other writes count from the next walk (oldest walk here: %s;\n"+
						"      the hourly xfsq snapshot --all walks every tree, --refresh walks them now).\n", when(oldest))
				}
			}
			if stale := reportTable(w, rows, f.columns, f.noHeaders, useColour(os.Stdout)); stale && !f.noHeaders {
				fmt.Fprintf(w, "stale: walked over %s ago (the hourly xfsq snapshot --all has not run): writes made\n"+
					"       outside xfsq since are not counted; xfsq report --refresh, or xfsq top on the tree,\n"+
					"       walks it now.\n", roughAge(sandbox.SnapshotInterval))
			}
			printDrift(w, rows)
			for _, t := range rows {
				if t.Escape != "" {
					fmt.Fprintf(w, "escape? %s %s: %s\n", safe(t.Project), t.Area, line(t.Escape))
				}
			}
			if !f.noHeaders {
				promiseLine(w, m, all)
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
func usageAge(t sandbox.TreeStatus) string {
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

func growth(d *int64) string {
	switch {
	case d == nil:
		return "-"
	case *d < 0:
		return "-" + units.FormatIEC(uint64(-*d))
	}
	return "+" + units.FormatIEC(uint64(*d))
}

// unowned is the report's footer figure; a failure to read it costs the
// report nothing but the line.
func unowned(ctx context.Context, m *sandbox.Manager) (sandbox.Unowned, bool) {
	u, ok, err := m.Unowned(ctx)
	return u, ok && err == nil
}

// promiseLine says what the limits promise of the disk and what the sweep
// policies would free, as docker system df and an Incus pool say them.
func promiseLine(w io.Writer, m *sandbox.Manager, rows []sandbox.TreeStatus) {
	p, disk, ok := m.Promise(rows)
	if !ok {
		return
	}
	var reclaim uint64
	planned := false
	for _, t := range rows {
		if t.ReclaimableBytes != nil {
			reclaim, planned = reclaim+*t.ReclaimableBytes, true
		}
	}
	s := fmt.Sprintf("promised: %s of hard limits on a %s disk (%.2fx)", units.FormatIEC(p.PromisedBytes), units.FormatIEC(disk), p.OvercommitRatio)
	if p.UnlimitedTrees > 0 {
		s += fmt.Sprintf(", and %s with no limit", plural(p.UnlimitedTrees, "tree", "trees"))
	}
	if planned {
		s += "; reclaimable by the sweep policies: " + units.FormatIEC(reclaim) + " (as last planned)"
	}
	fmt.Fprintln(w, s)
}
