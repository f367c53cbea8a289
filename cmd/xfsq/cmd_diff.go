package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliargs"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/textout"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/units"
)

func diffCommand(with withEnv) *cli.Command {
	return &cli.Command{
		Name: "diff", Usage: "what changed in a tree since a day (or --since) ago, from the stored snapshots", ArgsUsage: "PROJECT",
		Description: "Compares the tree's newest snapshot with the one kept from --since before it (default 24h): the\n" +
			"directories that grew or shrank most (each the deepest that carries its change), and the top-level\n" +
			"entries that are new or gone. Nothing is walked: snapshots are the hourly pass's (xfsq snapshot\n" +
			"--all), and one is kept for comparison every few hours for 8 days, so FROM may be a little older\n" +
			"than asked; the header says which two are compared. --area picks the tree (default workspace).",
		Flags: []cli.Flag{cliargs.AreaFlag(),
			&cli.StringFlag{Name: "since", Value: "24h", Usage: "how far back to compare (45m, 6h, 2d, 1w)"},
			&cli.IntFlag{Name: "top", Value: sandbox.DefaultDiffTop, Usage: "paths shown in each list"}},
		Action: with(reads(cmdDiff)),
	}
}

func cmdDiff(e env) error {
	if e.c.NArg() != 1 {
		return cliargs.Usagef("diff takes one PROJECT, got %d arguments: see xfsq diff --help", e.c.NArg())
	}
	since, err := units.ParseDuration(e.c.String("since"))
	if err != nil || since <= 0 {
		return cliargs.Usagef("--since %q: use a duration such as 6h, 24h or 7d", e.c.String("since"))
	}
	top := e.c.Int("top")
	if top < 1 || top > sandbox.MaxDiffTop {
		return cliargs.Usagef("--top %d: use 1 to %d", top, sandbox.MaxDiffTop)
	}
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		d, err := m.Diff(ctx, e.c.Args().First(), sandbox.DiffOptions{Area: e.c.String("area"), Since: since, Top: top})
		if err != nil {
			return err
		}
		return e.print(d, func(w io.Writer) { diffText(w, d) })
	})
}

func diffText(w io.Writer, d sandbox.TreeDiff) {
	fmt.Fprintf(w, "%s %s: %s → %s (%s), %s → %s\n", textout.Safe(d.Project), d.Area, units.FormatIEC(d.FromBytes), units.FormatIEC(d.ToBytes),
		textout.Growth(&d.ChangeBytes), textout.When(d.FromAt), textout.When(d.ToAt))
	if d.Partial {
		fmt.Fprintln(w, "note: the newest snapshot's walk ran out of its budget: what it did not reach reads as shrunk.")
	}
	for _, l := range []struct {
		title string
		rows  []sandbox.PathChange
	}{{"grew", d.Grew}, {"shrank", d.Shrank}, {"new", d.New}, {"gone", d.Gone}} {
		if len(l.rows) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", l.title)
		rows := make([][]string, len(l.rows))
		for i, c := range l.rows {
			rows[i] = []string{"  " + textout.Growth(&c.ChangeBytes), units.FormatIEC(c.FromBytes) + " → " + units.FormatIEC(c.ToBytes), textout.Safe(c.Path)}
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		tw.Flush()
	}
	if len(d.Grew)+len(d.Shrank)+len(d.New)+len(d.Gone) == 0 {
		fmt.Fprintln(w, "nothing changed")
	}
}
