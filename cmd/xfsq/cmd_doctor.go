package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliargs"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/textout"
	"github.com/xfsq/xfsq/sandbox"
)

func doctorCommand(with withEnv) *cli.Command {
	return &cli.Command{
		Name: "doctor", Usage: "find drift between the store, the directories and the kernel; --fix repairs it",
		Description: "Reports interrupted adds and removals, missing directories, trees whose root lost its project ID,\n" +
			"limits changed behind xfsq's back, kernel IDs no project owns, directories no project owns, and\n" +
			"deletions journalled as pending whose process stopped before confirming them.\n" +
			"--fix repairs what it can, journalling each repair (doctor.repaired). Exit 1 while drift remains.",
		Flags:  []cli.Flag{&cli.BoolFlag{Name: "fix", Usage: "repair what can be repaired"}},
		Action: with(cmdDoctor),
	}
}

func cmdDoctor(e env) error {
	if !e.c.Bool("fix") {
		e.fullDisk = sandbox.FullDiskReadOnly // finding drift only reads
	}
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		findings, err := m.Doctor(ctx, e.c.Bool("fix"))
		if err != nil {
			return err
		}
		if findings == nil {
			findings = []sandbox.Finding{}
		}
		e.print(findings, func(w io.Writer) {
			if len(findings) == 0 {
				fmt.Fprintln(w, "no drift: store, directories and kernel agree")
			}
			for _, f := range findings {
				status := "found"
				switch {
				case f.Fixed:
					status = "fixed"
				case f.Error != "":
					status = "FIX FAILED: " + f.Error
				}
				where := strings.TrimSpace(strings.Join([]string{f.Project, f.Area, textout.Safe(f.Path)}, " "))
				fmt.Fprintf(w, "%s: %s %s: %s; fix: %s\n", textout.Line(status), f.Kind, where, textout.Line(f.Detail), textout.Line(f.Fix))
			}
		})
		if sandbox.Unresolved(findings) {
			return &cliargs.ExitError{Code: exitFailed}
		}
		return nil
	})
}
