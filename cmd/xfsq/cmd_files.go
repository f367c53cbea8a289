package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/urfave/cli/v2"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliargs"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/fromfile"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/textout"
	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/units"
)

func filesCommand(with withEnv) *cli.Command {
	return &cli.Command{
		Name:  "files",
		Usage: "list, read, write and delete files inside a project tree, within its limits",
		Description: "PATH is relative to the project's tree (--area workspace by default; the root's inbound tree,\n" +
			"inbound/, is PROJECT " + sandbox.RootOwner + " with --area inbound). Paths that are absolute,\n" +
			"contain \"..\", lead out of the tree through a symlink, or name devices, FIFOs or sockets are refused\n" +
			"(exit 2). Writes are admitted before they allocate anything and refused (exit 3) past a limit;\n" +
			"a refused or failed write leaves the old file exactly as it was. rm is journalled (storage.evicted).",
		Subcommands: []*cli.Command{
			{Name: "ls", Usage: "list a directory", ArgsUsage: "PROJECT [PATH]", Flags: []cli.Flag{cliargs.AreaFlag()}, Action: with(reads(cmdFilesLs))},
			{Name: "get", Usage: "copy a file to stdout", ArgsUsage: "PROJECT PATH", Flags: []cli.Flag{cliargs.AreaFlag()}, Action: with(reads(cmdFilesGet))},
			{
				Name: "put", Usage: "write stdin (or --from FILE) to a file, atomically", ArgsUsage: "PROJECT PATH",
				Flags:  []cli.Flag{cliargs.AreaFlag(), &cli.StringFlag{Name: "from", Usage: "read this file instead of stdin"}},
				Action: with(cmdFilesPut),
			},
			{Name: "rm", Usage: "delete a file, or with --recursive a directory (journalled)", ArgsUsage: "PROJECT PATH",
				Description: "A directory needs --recursive, as with rm -r. uploads/ and inbox/ are part of every workspace:\n" +
					"--recursive empties them (each entry journalled) and leaves them in place.",
				Flags:  []cli.Flag{cliargs.AreaFlag(), &cli.BoolFlag{Name: "recursive", Aliases: []string{"r"}, Usage: "delete a directory and everything in it"}},
				Action: with(frees(cmdFilesRm))},
		},
	}
}

// filesArgs reads PROJECT and PATH (PATH optional when optionalPath).
func filesArgs(e env, optionalPath bool) (string, string, error) {
	n := e.c.NArg()
	if n == 2 || (optionalPath && n == 1) {
		return e.c.Args().Get(0), e.c.Args().Get(1), nil
	}
	name := cliargs.CommandName(e.c)
	return "", "", cliargs.Usagef("%s takes PROJECT PATH, got %d arguments: see xfsq %s --help", name, n, name)
}

func withFiles(e env, fn func(ctx context.Context, l *files.Layer) error) error {
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		l, err := m.Files().ForWrites(ctx)
		if err != nil {
			return err
		}
		return fn(ctx, l)
	})
}

func cmdFilesLs(e env) error {
	name, p, err := filesArgs(e, true)
	if err != nil {
		return err
	}
	return withFiles(e, func(ctx context.Context, l *files.Layer) error {
		entries, err := l.List(ctx, name, e.c.String("area"), p)
		if err != nil {
			return err
		}
		return e.print(entries, func(w io.Writer) { filesTable(w, entries) })
	})
}

func cmdFilesGet(e env) error {
	name, p, err := filesArgs(e, false)
	if err != nil {
		return err
	}
	return withFiles(e, func(ctx context.Context, l *files.Layer) error {
		_, err := l.Get(ctx, name, e.c.String("area"), p, e.stdout)
		return err
	})
}

func cmdFilesPut(e env) error {
	name, p, err := filesArgs(e, false)
	if err != nil {
		return err
	}
	in := os.Stdin
	if from := e.c.String("from"); from != "" {
		root, err := e.root()
		if err != nil {
			return err
		}
		if in, err = fromfile.Open(from, root, name, p); err != nil {
			return err
		}
		defer in.Close()
	}
	size := int64(-1) // a pipe: unknown until it ends
	if fi, err := in.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	return withFiles(e, func(ctx context.Context, l *files.Layer) error {
		res, err := l.Put(ctx, name, e.c.String("area"), p, in, size)
		if err != nil {
			return err
		}
		return e.print(res, func(w io.Writer) {
			verb := "wrote"
			if res.Replaced {
				verb = "replaced"
			}
			fmt.Fprintf(w, "%s %s (%s)\n", verb, textout.Safe(res.Path), units.FormatIEC(res.WrittenBytes))
		})
	})
}

func cmdFilesRm(e env) error {
	name, p, err := filesArgs(e, false)
	if err != nil {
		return err
	}
	return withFiles(e, func(ctx context.Context, l *files.Layer) error {
		res, err := l.Remove(ctx, name, e.c.String("area"), p, files.RemoveOptions{Recursive: e.c.Bool("recursive")})
		if err != nil {
			return err
		}
		return e.print(res, func(w io.Writer) {
			fmt.Fprintf(w, "removed %s (%s in %s)\n", textout.Safe(res.Path), units.FormatIEC(res.Bytes), textout.Plural(res.Files, "file", "files"))
		})
	})
}

// filesTable lists a directory, sorted by name as ls does.
func filesTable(w io.Writer, entries []files.Entry) {
	sorted := append([]files.Entry(nil), entries...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	rows := make([][]string, len(sorted))
	for i, en := range sorted {
		mod := "-"
		if !en.ModTime.IsZero() {
			mod = textout.When(en.ModTime)
		}
		rows[i] = []string{en.Type, units.FormatIEC(uint64(max(en.Size, 0))), mod, textout.Safe(en.Name)}
	}
	textout.Table(w, "TYPE\tSIZE\tMODIFIED\tNAME", rows)
}
