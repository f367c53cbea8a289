package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/project"
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
		if err := project.ValidateArea(a); err != nil {
			return f, usagef("--area: %v", err)
		}
	}
	if f.overSet && (f.over < 0 || f.over != f.over) {
		return f, usagef("--over %v: use a percentage, 0 or more (e.g. 90)", f.over)
	}
	switch f.sortBy {
	case "project", "used", "percent", "growth":
	default:
		return f, usagef("--sort %q: use project, used, percent or growth", f.sortBy)
	}
	return f, nil
}

// apply keeps the rows asked for, in the order asked for. A project named
// that has no row is an error: a typo must not read as "all is well".
func (f reportFilter) apply(rows []project.TreeStatus) ([]project.TreeStatus, error) {
	for _, p := range f.projects {
		if !slices.ContainsFunc(rows, func(t project.TreeStatus) bool { return t.Project == p }) {
			return nil, usagef("--project %s: no such project (xfsq project list names them)", safe(p))
		}
	}
	out := []project.TreeStatus{}
	for _, t := range rows {
		switch {
		case len(f.projects) > 0 && !slices.Contains(f.projects, t.Project):
		case len(f.areas) > 0 && !slices.Contains(f.areas, t.Area):
		case f.overSet && (t.BytesHard == 0 || t.Percent < f.over):
		default:
			out = append(out, t)
		}
	}
	growth := func(t project.TreeStatus) int64 {
		if t.Growth24h == nil {
			return -1 << 62
		}
		return *t.Growth24h
	}
	slices.SortStableFunc(out, func(a, b project.TreeStatus) int {
		switch f.sortBy {
		case "used":
			return cmpDesc(a.UsedBytes, b.UsedBytes)
		case "percent":
			return cmpDesc(a.Percent, b.Percent)
		case "growth":
			return cmpDesc(growth(a), growth(b))
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
func atHard(t project.TreeStatus) bool {
	return (t.BytesHard > 0 && t.UsedBytes >= t.BytesHard) || (t.InodesHard > 0 && t.UsedInodes >= t.InodesHard)
}

func overSoft(t project.TreeStatus) bool {
	return (t.BytesSoft > 0 && t.UsedBytes > t.BytesSoft) || (t.InodesSoft > 0 && t.UsedInodes > t.InodesSoft)
}

func anyAtHard(rows []project.TreeStatus) bool { return slices.ContainsFunc(rows, atHard) }

// graceText says when the first running soft-limit grace of a tree ends.
func graceText(t project.TreeStatus, now time.Time) string {
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
		return "ended " + when(*ends)
	}
	return "until " + when(*ends)
}

// reportTable prints one row per tree; on a terminal, a tree at its hard
// limit is red and one over its soft limit yellow.
// reportTable prints the rows and says whether any of them is stale.
func reportTable(w io.Writer, rows []project.TreeStatus, noHeaders, colour bool) (stale bool) {
	now := time.Now()
	out := make([][]string, len(rows))
	for i, t := range rows {
		active := "-"
		if t.LastActivityAt != nil {
			active = when(*t.LastActivityAt)
		}
		stale = stale || t.Stale
		out[i] = append(treeRow(t, true), graceText(t, now), growth(t.Growth24h), growth(t.Growth7d), active, usageAge(t))
		out[i][0] = safe(out[i][0])
	}
	header := "PROJECT\t" + treeHeader + "\tGRACE\t24H\t7D\tLAST ACTIVE\tAS OF"
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
