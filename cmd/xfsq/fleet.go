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
	"github.com/xfsq/xfsq/units"
)

// The fleet's options, shared by report and events: --host names the host
// this command runs as, so the hosts read are named by --on-host.

func onHostFlag() cli.Flag {
	return &cli.StringFlag{Name: "on-host", Usage: "read these hosts of the shared store instead of this one (comma-separated; xfsq host list names them)"}
}

func allHostsFlag() cli.Flag {
	return &cli.BoolFlag{Name: "all-hosts", Usage: "read every host of the shared store, each row with its host"}
}

// fleetAsked says whether the command line reads across hosts.
func fleetAsked(e env) bool { return e.c.Bool("all-hosts") || e.c.String("on-host") != "" }

// cmdReportFleet is report --all-hosts / --on-host: every tree of the
// hosts asked for, as the store last recorded it, with its host and the
// age of its figures (another host's trees are never walked from here).
func cmdReportFleet(e env) error {
	if e.c.Bool("all-hosts") && e.c.String("on-host") != "" {
		return cliargs.Usagef("--all-hosts reads every host; --on-host names some: give one of them")
	}
	for _, f := range []string{"project", "area", "over", "sort", "check"} {
		if e.c.IsSet(f) {
			return cliargs.Usagef("--%s filters this host's report; the fleet's rows (--all-hosts, --on-host) take none of it: drop --%s, or filter the --json rows", f, f)
		}
	}
	if e.c.Bool("refresh") {
		return cliargs.Usagef("--refresh walks this host's trees; another host's are read as it last recorded them: drop --refresh")
	}
	return e.manager(func(ctx context.Context, m *sandbox.Manager) error {
		out, err := m.FleetStorage(ctx, sandbox.FleetQuery{Hosts: cliargs.SplitList(e.c.String("on-host"))})
		if err != nil {
			return err
		}
		return e.print(out, func(w io.Writer) { fleetTable(w, out, e.c.Bool("no-headers")) })
	})
}

func fleetTable(w io.Writer, out sandbox.FleetStorage, noHeaders bool) {
	rows := make([][]string, len(out.Trees))
	for i, t := range out.Trees {
		hard, pct := "-", "-"
		if t.BytesHard > 0 {
			hard, pct = units.FormatIEC(t.BytesHard), fmt.Sprintf("%.0f%%", t.Percent)
		}
		age := "never measured"
		if t.FiguresAgeSeconds != nil {
			age = textout.RoughAge(time.Duration(*t.FiguresAgeSeconds * float64(time.Second)))
		}
		host := textout.Safe(t.Host)
		if t.HostStale {
			host += " (stale)"
		}
		rows[i] = []string{host, textout.Safe(t.Project), t.Area, units.FormatIEC(t.UsedBytes), hard, pct, age}
	}
	header := "HOST\tPROJECT\tAREA\tUSED\tHARD\t%\tAGE"
	if noHeaders {
		header = ""
	}
	textout.Table(w, header, rows)
}
