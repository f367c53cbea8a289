package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/textout"
	"github.com/xfsq/xfsq/sandbox"
)

func exportCommand(with withEnv) *cli.Command {
	return &cli.Command{
		Name:  "export",
		Usage: "write xfsq's state in other tools' formats",
		Subcommands: []*cli.Command{{
			Name: "xfs-projects", Usage: "lines for /etc/projects and /etc/projid so xfs_quota works by name",
			Description: "Prints the lines; with --write, updates the files in place: lines for xfsq's IDs are replaced,\n" +
				"every other line is kept.",
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "write", Usage: "update the files instead of printing"},
				&cli.StringFlag{Name: "projects-file", Value: "/etc/projects"},
				&cli.StringFlag{Name: "projid-file", Value: "/etc/projid"},
			},
			Action: with(cmdExportXFS),
		}},
	}
}

func cmdExportXFS(e env) error {
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		var lines sandbox.XFSProjects
		var err error
		if e.c.Bool("write") {
			lines, err = m.WriteXFSProjectFiles(ctx, e.c.String("projects-file"), e.c.String("projid-file"))
		} else {
			lines, err = m.ExportXFS(ctx)
		}
		if err != nil {
			return err
		}
		return e.print(lines, func(w io.Writer) {
			if e.c.Bool("write") {
				fmt.Fprintf(w, "updated %s (%s) and %s (%s)\n", e.c.String("projects-file"), textout.Plural(len(lines.Projects), "xfsq line", "xfsq lines"),
					e.c.String("projid-file"), textout.Plural(len(lines.Projid), "xfsq line", "xfsq lines"))
				return
			}
			fmt.Fprintf(w, "# %s\n%s\n# %s\n%s\n", e.c.String("projects-file"), strings.Join(lines.Projects, "\n"),
				e.c.String("projid-file"), strings.Join(lines.Projid, "\n"))
		})
	})
}
