package main

import (
	"context"
	"fmt"
	"io"
	"path"
	"sort"

	"github.com/urfave/cli/v2"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliargs"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/textout"
	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/units"
)

func topCommand(with withEnv) *cli.Command {
	return &cli.Command{
		Name: "top", Usage: "what fills a tree: sizes, percent and mtimes, largest first", ArgsUsage: "PROJECT [PATH]",
		Description: "Walks the tree, or the directory PATH inside it (relative to the tree; no \"..\", no symlink out of\n" +
			"it, no other mount), and shows each directory's allocated and apparent size, share, file count and\n" +
			"newest mtime, with the largest files beside the directories they sit among. The walk keeps the\n" +
			"max(--limit, 20) largest entries of each directory; --sort orders those and --limit are shown.\n" +
			"The root's inbound tree is PROJECT " + sandbox.RootOwner + " with --area inbound.",
		Flags: []cli.Flag{cliargs.AreaFlag(), &cli.IntFlag{Name: "depth", Value: 2, Usage: "levels to show (1-8)"},
			&cli.IntFlag{Name: "limit", Value: 20, Usage: "entries shown per directory"},
			&cli.StringFlag{Name: "sort", Value: "size", Usage: "order of each directory's entries: " + cliargs.SortUsage(cliargs.TopSorts)}},
		Action: with(reads(cmdTop)),
	}
}

func cmdTop(e env) error {
	collectLess()
	if n := e.c.NArg(); n < 1 || n > 2 {
		return cliargs.Usagef("top takes PROJECT [PATH], got %d arguments: see xfsq top --help", n)
	}
	name, sub := e.c.Args().Get(0), e.c.Args().Get(1)
	depth, limit, sortBy := e.c.Int("depth"), e.c.Int("limit"), e.c.String("sort")
	switch {
	case depth < 1 || depth > inventory.MaxDepth:
		return cliargs.Usagef("--depth %d: use 1 to %d", depth, inventory.MaxDepth)
	case limit < 1:
		return cliargs.Usagef("--limit %d: use a positive number", limit)
	}
	sortBy, err := cliargs.ParseSort(sortBy, "top", cliargs.TopSorts)
	if err != nil {
		return err
	}
	var progress func(sandbox.TreeProgress)
	if e.watched() {
		progress = func(p sandbox.TreeProgress) { e.progress.Show(textout.WalkProgress(p)) }
	}
	return withFiles(e, func(ctx context.Context, l *files.Layer) error {
		res, err := l.Top(ctx, name, e.c.String("area"), sub, inventory.Options{Depth: depth, TopK: max(limit, 20), RawStat: true, BatchStat: true}, progress)
		if err != nil {
			return err
		}
		return e.print(res, func(w io.Writer) { topTable(w, res, sortBy, limit) })
	})
}

// topEntry is one row under a directory: a subdirectory, or one of the
// largest files, shown beside the directories it sits among.
type topEntry struct {
	node *inventory.Node
	file *inventory.File
}

func (t topEntry) path() string {
	if t.node != nil {
		return t.node.Path
	}
	return t.file.Path
}

func (t topEntry) size() uint64 {
	if t.node != nil {
		return t.node.SizeBytes
	}
	return t.file.SizeBytes
}

// entriesOf is what a directory of the walk shows: its kept subdirectories
// and the top files directly in it, sorted by sortBy, at most limit.
func entriesOf(n *inventory.Node, filesIn map[string][]inventory.File, sortBy string, limit int) []topEntry {
	var out []topEntry
	for _, c := range n.Children {
		out = append(out, topEntry{node: c})
	}
	for i := range filesIn[n.Path] {
		out = append(out, topEntry{file: &filesIn[n.Path][i]})
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch sortBy {
		case "name":
			return a.path() < b.path()
		case "files":
			fa, fb := uint64(1), uint64(1)
			if a.node != nil {
				fa = a.node.Files
			}
			if b.node != nil {
				fb = b.node.Files
			}
			if fa != fb {
				return fa > fb
			}
		case "mtime":
			// A file of the top list has no mtime of its own: after the directories.
			if (a.node == nil) != (b.node == nil) {
				return a.node != nil
			}
			if a.node != nil && !a.node.Mtime.Equal(b.node.Mtime) {
				return a.node.Mtime.After(b.node.Mtime)
			}
		}
		return a.size() > b.size()
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// filesByDir groups a walk's largest files by the directory holding them.
func filesByDir(top []inventory.File) map[string][]inventory.File {
	out := map[string][]inventory.File{}
	for _, f := range top {
		d := path.Dir(f.Path)
		out[d] = append(out[d], f)
	}
	return out
}

// topTable prints what fills a tree: each directory with its share, file
// count, newest mtime, allocated and apparent size, and the largest files
// beside the directories they sit among.
func topTable(w io.Writer, res files.TopResult, sortBy string, limit int) {
	where := textout.Safe(res.Project) + " " + res.Area
	if res.Path != "." {
		where += " " + textout.Safe(res.Path)
	}
	fmt.Fprintf(w, "%s, walked %s\n", where, textout.When(res.WalkedAt))
	total := max(res.Root.SizeBytes, 1)
	byDir := filesByDir(res.TopFiles)
	var rows [][]string
	share := func(n uint64) string { return fmt.Sprintf("%.1f%%", float64(n)*100/float64(total)) }
	var walk func(n *inventory.Node, indent string)
	walk = func(n *inventory.Node, indent string) {
		rows = append(rows, []string{"dir", units.FormatIEC(n.SizeBytes), units.FormatIEC(n.ApparentBytes), share(n.SizeBytes),
			fmt.Sprint(n.Files), textout.When(n.Mtime), indent + textout.Safe(n.Path)})
		for _, e := range entriesOf(n, byDir, sortBy, limit) {
			if e.node != nil {
				walk(e.node, indent+"  ")
				continue
			}
			rows = append(rows, []string{"file", units.FormatIEC(e.file.SizeBytes), "-", share(e.file.SizeBytes), "1", "-",
				indent + "  " + textout.Safe(e.file.Path)})
		}
	}
	walk(res.Root, "")
	textout.Table(w, "TYPE\tSIZE\tAPPARENT\tSHARE\tFILES\tNEWEST\tPATH", rows)
	if len(res.TopFiles) > 0 {
		fmt.Fprintln(w, "\nlargest files:")
		for _, f := range res.TopFiles[:min(10, len(res.TopFiles))] {
			fmt.Fprintf(w, "  %10s  %s\n", units.FormatIEC(f.SizeBytes), textout.Safe(f.Path))
		}
	}
	if res.Partial {
		fmt.Fprintln(w, "(partial: the walk ran out of time)")
	}
	if res.UnreadableEntries > 0 {
		fmt.Fprintf(w, "(%s unreadable)\n", textout.Plural(res.UnreadableEntries, "entry", "entries"))
	}
}
