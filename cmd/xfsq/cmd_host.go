package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliargs"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/textout"
	"github.com/xfsq/xfsq/sandbox"
)

func hostCommand(with withEnv) *cli.Command {
	return &cli.Command{
		Name:  "host",
		Usage: "the fleet: the hosts sharing this store, and retiring one",
		Subcommands: []*cli.Command{
			{
				Name: "list", Usage: "every host of the shared store: last seen, version, backend, root, projects, stale or not",
				Description: "Each xfsq serve records a heartbeat every fleet_heartbeat_interval (30s by default). A host not\n" +
					"seen for fleet_stale_after (2m), or for twice its own interval if longer, is stale; a host that\n" +
					"registered projects but never beat (a CLI-only host, or an older xfsq) is listed stale with no\n" +
					"last seen. No host is ever left out; retired hosts are listed apart.",
				Action: with(reads(cmdHostList)),
			},
			{
				Name: "retire", Usage: "take a host that is gone off the live list, keeping its history", ArgsUsage: "NAME",
				Description: "Settles every deletion the host left pending as abandoned (whether the entry went is unknown:\n" +
					"no host is left to look, so none is claimed done), frees its sweep locks, leases and passes,\n" +
					"and journals host.retired. Its projects, snapshots and journal stay readable (--on-host NAME).\n" +
					"A host still reporting is refused unless --force: stop its xfsq serve first. A host cannot\n" +
					"retire itself.",
				Flags:  []cli.Flag{&cli.BoolFlag{Name: "force", Usage: "retire the host even though it is still reporting"}},
				Action: with(cmdHostRetire),
			},
		},
	}
}

func cmdHostList(e env) error {
	if e.c.NArg() > 0 {
		return cliargs.Usagef("host list takes no arguments, got %q", e.c.Args().First())
	}
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		fleet, err := m.FleetHosts(ctx)
		if err != nil {
			return err
		}
		return e.print(fleet, func(w io.Writer) { hostTable(w, fleet) })
	})
}

func hostTable(w io.Writer, fleet sandbox.FleetHosts) {
	var rows [][]string
	for _, h := range append(fleet.Hosts, fleet.Retired...) {
		state, seen := "fresh", "never"
		switch {
		case h.RetiredAt != nil:
			state = "retired " + textout.When(*h.RetiredAt) + " by " + textout.Safe(h.RetiredBy)
		case h.Stale:
			state = "STALE"
		}
		if h.AgeSeconds != nil {
			seen = textout.RoughAge(time.Duration(*h.AgeSeconds*float64(time.Second))) + " ago"
		}
		name := textout.Safe(h.Host)
		if h.This {
			name += " (this)"
		}
		rows = append(rows, []string{name, state, seen, textout.Safe(h.Version), h.Backend, fmt.Sprint(h.Projects), textout.Safe(h.Root)})
	}
	textout.Table(w, "HOST\tSTATE\tLAST SEEN\tVERSION\tBACKEND\tPROJECTS\tROOT", rows)
	fmt.Fprintf(w, "stale: not seen for %s (fleet_stale_after)\n", textout.RoughAge(time.Duration(fleet.StaleAfterSeconds*float64(time.Second))))
}

func cmdHostRetire(e env) error {
	if e.c.NArg() != 1 {
		return cliargs.Usagef("host retire takes one host name: xfsq host retire NAME (xfsq host list names them)")
	}
	name := e.c.Args().First()
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		out, err := m.RetireHost(ctx, name, e.c.Bool("force"))
		if err != nil {
			return err
		}
		return e.print(out, func(w io.Writer) {
			if out.Already {
				fmt.Fprintf(w, "host %s was already retired at %s: nothing done\n", textout.Safe(out.Host), textout.When(out.RetiredAt))
				return
			}
			fmt.Fprintf(w, "retired host %s; its history stays (xfsq events --on-host %s)\n", textout.Safe(out.Host), textout.Safe(out.Host))
			for _, d := range out.Abandoned {
				fmt.Fprintf(w, "abandoned: %s %s (pending when the host stopped; whether it went is unknown)\n", textout.Safe(d.Project), textout.Safe(d.Path))
			}
		})
	})
}
