package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/urfave/cli/v2"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliargs"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/textout"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/units"
)

func snapshotCommand(with withEnv) *cli.Command {
	return &cli.Command{
		Name: "snapshot", Usage: "walk trees, store their totals and top paths, print them", ArgsUsage: "[PROJECT…]",
		Description: "Walks each tree of the named projects (or, with --all, every tree: the root's inbound tree too;\n" +
			"--area inbound alone walks that one) like du: allocated and\n" +
			"apparent bytes, files, directories, newest mtime, aggregated to --depth with the --top largest\n" +
			"sub-paths per level and the --top largest files. Totals are kept for growth (report's growth_24h,\n" +
			"growth_7d). --all is the scheduled pass: it runs at idle I/O priority and nice 10 and journals one\n" +
			"storage.snapshot event. A tree that fails is reported and the others go on.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "all", Usage: "every project"},
			&cli.StringFlag{Name: "area", Usage: "only this area (" + cliargs.AreaUsage + ")"},
			&cli.IntFlag{Name: "depth", Value: 3, Usage: "aggregate to this depth (1-8)"},
			&cli.IntFlag{Name: "top", Value: 20, Usage: "largest sub-paths per level and largest files kept"},
			cliargs.DurationFlag("budget", "", "stop each walk after this long and mark it partial (0: no limit)"),
		},
		Action: with(cmdSnapshot),
	}
}

// collectLess trades memory for time in a command that walks: a walk's
// garbage is short-lived names, and a collection during it takes a core
// from the walk. 200, not more: at 400 the garbage a wide tree's walk
// leaves grew the peak with the tree (29 MiB at 1,000,000 files, 36 MiB
// at 3,000,000), at 200 it stays flat (27–30 MiB) for no more CPU
// (docs/benchmarks.md). An operator's GOGC wins.
func collectLess() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(200)
	}
}

func cmdSnapshot(e env) error {
	collectLess()
	budget, err := cliargs.Duration(e.c, "budget")
	if err != nil {
		return err
	}
	o := sandbox.SnapshotOptions{Projects: e.c.Args().Slice(), Area: e.c.String("area"), Scheduled: e.c.Bool("all"),
		// The CLI runs nothing beside its walk: raw stats are safe here.
		Walk: inventory.Options{Depth: e.c.Int("depth"), TopK: e.c.Int("top"), Budget: budget, RawStat: true, BatchStat: true}}
	if len(o.Projects) == 0 && !o.Scheduled {
		o.Projects = sandbox.ImpliedProjects([]string{o.Area})
	}
	switch {
	case len(o.Projects) == 0 && !o.Scheduled:
		return cliargs.Usagef("snapshot needs PROJECT names or --all: see xfsq snapshot --help")
	case len(o.Projects) > 0 && o.Scheduled:
		return cliargs.Usagef("snapshot takes PROJECT names or --all, not both")
	// 0 is the library's "default"; the CLI's flags have their own.
	case o.Walk.Depth == 0:
		return cliargs.Usagef("--depth 0: use 1 to %d", inventory.MaxDepth)
	case o.Walk.TopK == 0:
		return cliargs.Usagef("--top 0: use a positive number")
	}
	if err := o.Validate(); err != nil {
		return err
	}
	// Progress only for a person watching: stdout and stderr on a terminal, no --json.
	if e.watched() {
		o.Progress = func(p sandbox.TreeProgress) { e.progress.Show(textout.WalkProgress(p)) }
	}
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
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
			return &cliargs.ExitError{Code: exitFailed}
		}
		return nil
	})
}

// snapshotText prints one walk per tree with its largest entries, files
// at the top level among them.
func snapshotText(w io.Writer, snaps []sandbox.TreeSnapshot) {
	for _, s := range snaps {
		if s.Error != "" {
			fmt.Fprintf(w, "%s %s: FAILED: %s\n", textout.Safe(s.Project), s.Area, textout.Line(s.Error))
			continue
		}
		note := ""
		if s.Partial {
			note = " (partial: the budget ran out)"
		}
		if s.Errors > 0 {
			note += fmt.Sprintf(" (%s unreadable)", textout.Plural(s.Errors, "entry", "entries"))
		}
		fmt.Fprintf(w, "%s %s: %s in %s, %s%s\n", textout.Safe(s.Project), s.Area, units.FormatIEC(s.SizeBytes),
			textout.Plural(s.Files, "file", "files"), textout.Plural(s.Dirs, "dir", "dirs"), note)
		for _, e := range entriesOf(&s.Node, filesByDir(s.TopFiles), "size", 5) {
			if e.node != nil {
				fmt.Fprintf(w, "  %10s  %s/\n", units.FormatIEC(e.node.SizeBytes), textout.Safe(e.node.Path))
			} else {
				fmt.Fprintf(w, "  %10s  %s\n", units.FormatIEC(e.file.SizeBytes), textout.Safe(e.file.Path))
			}
		}
	}
}
