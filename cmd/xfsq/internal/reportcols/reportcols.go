// Package reportcols is the columns xfsq report can show (-o NAME,…, as ps
// and kubectl name theirs): each column's name, header and how a tree's
// figure reads in it, and which columns a command line asks for.
//
// It words figures the library computed: it never reads the root, the
// store or a backend, and never filters or orders rows (the library's
// report does).
package reportcols

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliargs"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/textout"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/units"
)

// Column is one column report can show.
type Column struct {
	Name, Header string
	Value        func(t sandbox.TreeStatus, now time.Time) string
}

var columns = []Column{
	{"project", "PROJECT", func(t sandbox.TreeStatus, _ time.Time) string { return textout.Safe(t.Project) }},
	{"area", "AREA", func(t sandbox.TreeStatus, _ time.Time) string { return t.Area }},
	{"id", "ID", func(t sandbox.TreeStatus, _ time.Time) string { return fmt.Sprint(t.ProjectID) }},
	{"used", "USED", func(t sandbox.TreeStatus, _ time.Time) string { return units.FormatIEC(t.UsedBytes) }},
	{"soft", "SOFT", func(t sandbox.TreeStatus, _ time.Time) string { return textout.Dash(t.BytesSoft, units.FormatIEC) }},
	{"hard", "HARD", func(t sandbox.TreeStatus, _ time.Time) string { return textout.Dash(t.BytesHard, units.FormatIEC) }},
	{"percent", "USE%", func(t sandbox.TreeStatus, _ time.Time) string {
		if t.BytesHard == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", t.Percent)
	}},
	{"inodes", "INODES", func(t sandbox.TreeStatus, _ time.Time) string { return textout.Count(t.UsedInodes) }},
	{"isoft", "ISOFT", func(t sandbox.TreeStatus, _ time.Time) string { return textout.Dash(t.InodesSoft, textout.Count) }},
	{"ihard", "IHARD", func(t sandbox.TreeStatus, _ time.Time) string { return textout.Dash(t.InodesHard, textout.Count) }},
	{"grace", "GRACE", GraceText},
	{"24h", "24H", func(t sandbox.TreeStatus, _ time.Time) string { return textout.Growth(t.Growth24hBytes) }},
	{"7d", "7D", func(t sandbox.TreeStatus, _ time.Time) string { return textout.Growth(t.Growth7dBytes) }},
	{"eta", "FULL IN", func(t sandbox.TreeStatus, _ time.Time) string { return textout.FullIn(t.FullInSeconds) }},
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
		return textout.When(*t.LastActivityAt)
	}},
	{"asof", "AS OF", func(t sandbox.TreeStatus, _ time.Time) string { return UsageAge(t) }},
}

// defaultColumns fit 100 columns for usual names; the fallback's rows add
// how old their figure is (AS OF), which on XFS is always now.
var defaultColumns = []string{"project", "area", "used", "hard", "percent", "grace", "24h", "eta"}

// Names is every column's name, in the order they show.
func Names() []string {
	var out []string
	for _, c := range columns {
		out = append(out, c.Name)
	}
	return out
}

// Parse reads -o: "wide" (every column) or names, comma-separated; nil
// for the default, chosen with the rows.
func Parse(value string, wide bool) ([]string, error) {
	switch {
	case wide && value != "":
		return nil, cliargs.Usagef("--wide and -o %s: give one of them", value)
	case wide || value == "wide":
		return Names(), nil
	case value == "":
		return nil, nil // the default, chosen with the rows
	}
	var out []string
	for _, name := range cliargs.SplitList(value) {
		name = strings.ToLower(name)
		if name == "use%" {
			name = "percent"
		}
		if !slices.ContainsFunc(columns, func(c Column) bool { return c.Name == name }) {
			return nil, cliargs.Usagef("-o %s: no column %q: use wide, or some of %s", value, name, strings.Join(Names(), ","))
		}
		out = append(out, name)
	}
	return out, nil
}

// For is the columns to show of rows: those asked for, else the default,
// with AS OF when a figure is a walk's (the fallback).
func For(asked []string, rows []sandbox.TreeStatus) []Column {
	names := asked
	if names == nil {
		names = defaultColumns
		if slices.ContainsFunc(rows, func(t sandbox.TreeStatus) bool { return t.UsageWalkedAt != nil || t.Stale }) {
			names = append(slices.Clone(names), "asof")
		}
	}
	out := make([]Column, 0, len(names))
	for _, n := range names {
		i := slices.IndexFunc(columns, func(c Column) bool { return c.Name == n })
		out = append(out, columns[i])
	}
	return out
}

// GraceText says when the first running soft-limit grace of a tree ends,
// as a span: "6d left", "ended 2h ago".
func GraceText(t sandbox.TreeStatus, now time.Time) string {
	var ends *time.Time
	for _, g := range []*time.Time{t.BytesGraceEndsAt, t.InodesGraceEndsAt} {
		if g != nil && (ends == nil || g.Before(*ends)) {
			ends = g
		}
	}
	switch {
	case ends == nil:
		return "-"
	case !ends.After(now):
		return "ended " + textout.ShortDuration(now.Sub(*ends)) + " ago"
	}
	return textout.ShortDuration(ends.Sub(now)) + " left"
}

// UsageAge says how old a row's figure is: "now" for the kernel's count,
// the age of the walk it starts from on the fallback, marked stale past
// the snapshot interval.
func UsageAge(t sandbox.TreeStatus) string {
	switch {
	case t.UsageAgeSeconds == nil && t.Stale:
		return "never walked (stale)"
	case t.UsageAgeSeconds == nil:
		return "now"
	}
	age := textout.RoughAge(time.Duration(*t.UsageAgeSeconds*float64(time.Second))) + " ago"
	if t.Stale {
		age += " (stale)"
	}
	return age
}
