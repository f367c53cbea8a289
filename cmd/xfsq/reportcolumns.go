package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/units"
)

// reportColumn is one column report can show (-o NAME,…), as ps and
// kubectl name theirs.
type reportColumn struct {
	name, header string
	value        func(t sandbox.TreeStatus, now time.Time) string
}

var reportColumns = []reportColumn{
	{"project", "PROJECT", func(t sandbox.TreeStatus, _ time.Time) string { return safe(t.Project) }},
	{"area", "AREA", func(t sandbox.TreeStatus, _ time.Time) string { return t.Area }},
	{"id", "ID", func(t sandbox.TreeStatus, _ time.Time) string { return fmt.Sprint(t.ProjectID) }},
	{"used", "USED", func(t sandbox.TreeStatus, _ time.Time) string { return units.FormatIEC(t.UsedBytes) }},
	{"soft", "SOFT", func(t sandbox.TreeStatus, _ time.Time) string { return dash(t.BytesSoft, units.FormatIEC) }},
	{"hard", "HARD", func(t sandbox.TreeStatus, _ time.Time) string { return dash(t.BytesHard, units.FormatIEC) }},
	{"percent", "USE%", func(t sandbox.TreeStatus, _ time.Time) string {
		if t.BytesHard == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", t.Percent)
	}},
	{"inodes", "INODES", func(t sandbox.TreeStatus, _ time.Time) string { return count(t.UsedInodes) }},
	{"isoft", "ISOFT", func(t sandbox.TreeStatus, _ time.Time) string { return dash(t.InodesSoft, count) }},
	{"ihard", "IHARD", func(t sandbox.TreeStatus, _ time.Time) string { return dash(t.InodesHard, count) }},
	{"grace", "GRACE", graceText},
	{"24h", "24H", func(t sandbox.TreeStatus, _ time.Time) string { return growth(t.Growth24hBytes) }},
	{"7d", "7D", func(t sandbox.TreeStatus, _ time.Time) string { return growth(t.Growth7dBytes) }},
	{"eta", "FULL IN", func(t sandbox.TreeStatus, _ time.Time) string { return fullIn(t.FullInSeconds) }},
	{"reclaimable", "RECLAIM", func(t sandbox.TreeStatus, _ time.Time) string {
		if t.ReclaimableBytes == nil {
			return "-"
		}
		return units.FormatIEC(*t.ReclaimableBytes)
	}},
	{"active", "LAST ACTIVE", func(t sandbox.TreeStatus, _ time.Time) string {
		if t.LastActivityAt == nil {
			return "-"
		}
		return when(*t.LastActivityAt)
	}},
	{"asof", "AS OF", func(t sandbox.TreeStatus, _ time.Time) string { return usageAge(t) }},
}

// defaultReportColumns fit 100 columns for usual names; the fallback's
// rows add how old their figure is (AS OF), which on XFS is always now.
var defaultReportColumns = []string{"project", "area", "used", "hard", "percent", "grace", "24h", "eta"}

func reportColumnNames() []string {
	var out []string
	for _, c := range reportColumns {
		out = append(out, c.name)
	}
	return out
}

// parseColumns reads -o: "wide" (every column) or names, comma-separated.
func parseColumns(value string, wide bool) ([]string, error) {
	switch {
	case wide && value != "":
		return nil, usagef("--wide and -o %s: give one of them", value)
	case wide || value == "wide":
		return reportColumnNames(), nil
	case value == "":
		return nil, nil // the default, chosen with the rows
	}
	var out []string
	for _, name := range splitList(value) {
		name = strings.ToLower(name)
		if name == "use%" {
			name = "percent"
		}
		if !slices.ContainsFunc(reportColumns, func(c reportColumn) bool { return c.name == name }) {
			return nil, usagef("-o %s: no column %q: use wide, or some of %s", value, name, strings.Join(reportColumnNames(), ","))
		}
		out = append(out, name)
	}
	return out, nil
}

// columnsFor is the columns to show of rows: those asked for, else the
// default, with AS OF when a figure is a walk's (the fallback).
func columnsFor(asked []string, rows []sandbox.TreeStatus) []reportColumn {
	names := asked
	if names == nil {
		names = defaultReportColumns
		if slices.ContainsFunc(rows, func(t sandbox.TreeStatus) bool { return t.UsageWalkedAt != nil || t.Stale }) {
			names = append(slices.Clone(names), "asof")
		}
	}
	out := make([]reportColumn, 0, len(names))
	for _, n := range names {
		i := slices.IndexFunc(reportColumns, func(c reportColumn) bool { return c.name == n })
		out = append(out, reportColumns[i])
	}
	return out
}

// fullIn says how long until a tree is full at its trend: "16h", "3d",
// "now", or "-" when it is not filling or too little is known.
func fullIn(secs *float64) string {
	switch {
	case secs == nil:
		return "-"
	case *secs <= 0:
		return "now"
	}
	return shortDuration(time.Duration(*secs * float64(time.Second)))
}

// shortDuration is a span in its largest whole unit: 45s, 12m, 16h, 6d.
func shortDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}
