package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"
	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliargs"
	"github.com/xfsq/xfsq/health"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/units"
)

func cmdHealth(e env) error {
	cfg, err := e.config()
	if err != nil {
		return err
	}
	budget, err := cliargs.Duration(e.c, "budget")
	if err != nil {
		return err
	}
	if budget <= 0 {
		return cliargs.Usagef("--budget %s: use a positive duration, e.g. 2s", budget)
	}
	ctx := e.c.Context
	src, err := sandbox.OpenHealth(ctx, cfg, budget)
	if err != nil {
		return err
	}
	defer src.Close()
	docker, err := health.NewDocker(health.DockerOptions{CacheTTL: src.DockerCacheTTL})
	if err != nil {
		return err
	}
	defer docker.Close()
	ch, err := health.New(health.Options{Root: src.Root, Thresholds: &src.Thresholds, Budget: budget, Docker: docker,
		Quota: src.Quota, Store: src.Store})
	if err != nil {
		return err
	}
	r := ch.Collect(ctx)
	if err := e.print(r, func(w io.Writer) { printHealth(w, r) }); err != nil {
		return err
	}
	if health.Failing(r.Status) {
		return &cliargs.ExitError{Code: exitFailed}
	}
	return nil
}

func onOff(b *bool) string {
	switch {
	case b == nil:
		return "unknown"
	case *b:
		return "on"
	}
	return "off"
}

func printHealth(w io.Writer, r health.Report) {
	fmt.Fprintf(w, "health: %s (checked %s in %.2f s)\n", r.Status, r.CheckedAt.Local().Format("2006-01-02 15:04:05 MST"), r.DurationSeconds)
	line := func(name string, p *health.Part, figures ...string) {
		if p.Reason != "" {
			figures = append(figures, string(p.Status)+": "+p.Reason)
		}
		if p.Error != "" {
			figures = append(figures, p.Error)
		}
		if p.Fix != "" {
			figures = append(figures, "fix: "+p.Fix)
		}
		for i, f := range figures {
			if i == 0 {
				fmt.Fprintf(w, "%-7s %-9s %s\n", name, p.Status, f)
			} else {
				fmt.Fprintf(w, "%-17s %s\n", "", f)
			}
		}
	}
	if d := r.Disk; d != nil {
		var fig []string
		for _, p := range d.Paths {
			name := p.Path
			if p.Area != "" {
				name = p.Area + "/"
			}
			switch {
			case p.Error != "":
				fig = append(fig, name+": unreadable")
			case p.SameFilesystemAsRoot:
				fig = append(fig, name+": on the root's filesystem")
			default:
				inodes := "inodes not limited"
				if p.FreeInodesPercent != nil {
					inodes = fmt.Sprintf("%d of %d inodes free", p.FreeInodes, p.TotalInodes)
				}
				fig = append(fig, fmt.Sprintf("%s: %s of %s available (%.1f%%), %s", name,
					units.FormatIEC(p.AvailableBytes), units.FormatIEC(p.TotalBytes), p.FreePercent, inodes))
			}
		}
		line("disk", &d.Part, fig...)
	}
	if c := r.CPU; c != nil {
		var fig []string
		if c.Status != health.Error || c.Cores > 0 {
			busy := "busy unknown"
			if c.BusyPercent != nil {
				busy = fmt.Sprintf("%.1f%% busy over %.2f s", *c.BusyPercent, c.BusyIntervalSeconds)
			}
			cores := "cores"
			if c.Cores == 1 {
				cores = "core"
			}
			fig = append(fig, fmt.Sprintf("load %.2f %.2f %.2f on %d %s (%.2f per core), %s", c.Load1, c.Load5, c.Load15, c.Cores, cores, c.LoadPerCore, busy))
		}
		line("cpu", &c.Part, fig...)
	}
	if m := r.Memory; m != nil {
		var fig []string
		if m.TotalBytes > 0 {
			fig = append(fig, fmt.Sprintf("%s of %s available (%.1f%%), swap %s free of %s", units.FormatIEC(m.AvailableBytes),
				units.FormatIEC(m.TotalBytes), m.AvailablePercent, units.FormatIEC(m.SwapFreeBytes), units.FormatIEC(m.SwapTotalBytes)))
		}
		line("memory", &m.Part, fig...)
	}
	if d := r.Docker; d != nil {
		var fig []string
		if d.Status != health.Error {
			fig = append(fig, fmt.Sprintf("%d running of %d containers, images %s (%d), build cache %s, volumes %s, containers %s",
				d.ContainersRunning, d.ContainersTotal, units.FormatIEC(uint64(max(d.ImagesBytes, 0))), d.Images,
				units.FormatIEC(uint64(max(d.BuildCacheBytes, 0))), units.FormatIEC(uint64(max(d.VolumesBytes, 0))),
				units.FormatIEC(uint64(max(d.ContainersBytes, 0)))),
				"sizes as of "+d.DiskUsageAt.Local().Format("2006-01-02 15:04:05 MST")+" ("+d.Host+")")
		}
		line("docker", &d.Part, fig...)
	}
	if q := r.Quota; q != nil {
		var fig []string
		if q.Backend.Kind != "" {
			f := "backend " + q.Backend.Kind
			if q.Backend.Reason != "" {
				f += " (" + q.Backend.Reason + ")"
			}
			if q.Accounting != nil || q.Enforcement != nil {
				f += ", accounting " + onOff(q.Accounting) + ", enforcement " + onOff(q.Enforcement)
			}
			fig = append(fig, f)
		}
		line("quota", &q.Part, fig...)
	}
	if s := r.Store; s != nil {
		var fig []string
		if s.Reachable {
			fig = append(fig, fmt.Sprintf("answered in %.1f ms", s.LatencySeconds*1000))
		}
		line("store", &s.Part, fig...)
	}
}

func healthCommand(with withEnv) *cli.Command {
	return &cli.Command{
		Name: "health", Usage: "is this host fit to run sandboxes? disk, cpu, memory, docker, quota, store",
		Description: "Each part answers on its own within --budget and carries its status (ok, warn, critical, error),\n" +
			"its figures and, on error, the error and a fix. Thresholds are the settings health_*.\n" +
			"Exit 1 when any part is critical or in error.",
		Flags:  []cli.Flag{cliargs.DurationFlag("budget", "2s", "time each part may take")},
		Action: with(cmdHealth),
	}
}
