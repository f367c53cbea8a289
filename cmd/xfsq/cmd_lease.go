package main

import (
	"context"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliargs"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/textout"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/units"
)

func leaseCommand(with withEnv) *cli.Command {
	return &cli.Command{
		Name:  "lease",
		Usage: "run leases: while a run holds one, sweeps never touch its project",
		Subcommands: []*cli.Command{
			{
				Name: "acquire", Usage: "take or renew a run's lease", ArgsUsage: "PROJECT RUN",
				Description: "RUN: " + sandbox.RunRule + ". The lease lapses after --ttl unless renewed.\n" +
					"A renewal never shortens a lease: one that already holds longer keeps its expiry\n" +
					"(kept_longer in --json); release it first to shorten it.",
				Flags:  []cli.Flag{&cli.StringFlag{Name: "ttl", Value: "2h", Usage: "how long the lease holds (at most 7d)"}},
				Action: with(cmdLeaseAcquire),
			},
			{Name: "release", Usage: "drop a run's lease", ArgsUsage: "PROJECT RUN", Action: with(cmdLeaseRelease)},
			{Name: "list", Usage: "every lease, held or lapsed", Action: with(reads(cmdLeaseList))},
		},
	}
}

func leaseArgs(e env) (string, string, error) {
	if e.c.NArg() != 2 {
		name := cliargs.CommandName(e.c)
		return "", "", cliargs.Usagef("%s takes PROJECT RUN, got %d arguments: see xfsq %s --help", name, e.c.NArg(), name)
	}
	return e.c.Args().Get(0), e.c.Args().Get(1), nil
}

func cmdLeaseAcquire(e env) error {
	name, run, err := leaseArgs(e)
	if err != nil {
		return err
	}
	ttl, err := units.ParseDuration(e.c.String("ttl"))
	if err != nil {
		return cliargs.Usagef("--ttl: %v", err)
	}
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		l, err := m.AcquireLease(ctx, name, run, ttl)
		if err != nil {
			return err
		}
		return e.print(l, func(w io.Writer) {
			fmt.Fprintf(w, "lease on %s for run %s until %s\n", name, run, textout.When(l.ExpiresAt))
			if l.KeptLonger {
				fmt.Fprintf(w, "(it already held longer than --ttl %s: a renewal never shortens a lease; release it first to shorten it)\n", e.c.String("ttl"))
			}
		})
	})
}

func cmdLeaseRelease(e env) error {
	name, run, err := leaseArgs(e)
	if err != nil {
		return err
	}
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		if err := m.ReleaseLease(ctx, name, run); err != nil {
			return err
		}
		return e.print(map[string]string{"project": name, "run": run, "released": "true"}, func(w io.Writer) {
			fmt.Fprintf(w, "released the lease of run %s on %s\n", run, name)
		})
	})
}

func cmdLeaseList(e env) error {
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		ls, err := m.Leases(ctx)
		if err != nil {
			return err
		}
		return e.print(ls, func(w io.Writer) {
			rows := make([][]string, len(ls))
			for i, l := range ls {
				state := "held"
				if !l.Active {
					state = "lapsed"
				}
				rows[i] = []string{l.Project, l.Run, state, textout.When(l.ExpiresAt)}
			}
			textout.Table(w, "PROJECT\tRUN\tSTATE\tUNTIL", rows)
		})
	})
}
