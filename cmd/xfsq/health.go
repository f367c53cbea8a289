package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/health"
	"github.com/xfsq/xfsq/project"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/quota/xfs"
	"github.com/xfsq/xfsq/settings"
	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/units"
)

func cmdHealth(e env) error {
	root, err := e.root()
	if err != nil {
		return err
	}
	budget := e.c.Duration("budget")
	if budget <= 0 {
		return usagef("--budget %s: use a positive duration, e.g. 2s", budget)
	}
	ctx := e.c.Context
	th, ttl := health.DefaultThresholds(), 60*time.Second
	var storeFn health.StoreFunc
	if err := project.CheckRoot(root); err != nil {
		err = &health.FixError{Err: err, Fix: "run xfsq init --root " + root}
		storeFn = func(context.Context) error { return err }
	} else {
		// Opening is bounded too: a PostgreSQL that does not answer must
		// not hold the whole answer past its budget.
		openCtx, cancel := context.WithTimeout(ctx, budget)
		st, err := store.Open(openCtx, e.dsn(root), e.host())
		cancel()
		if err != nil {
			storeFn = func(context.Context) error { return err }
		} else {
			defer st.Close()
			storeFn = st.Ping
			if sth, sttl, err := healthSettings(ctx, st); err != nil {
				// The defaults still judge the rest; the store part says why.
				storeFn = func(context.Context) error { return fmt.Errorf("reading the health_* settings: %w", err) }
			} else {
				th, ttl = sth, sttl
			}
		}
	}
	docker, err := health.NewDocker(health.DockerOptions{CacheTTL: ttl})
	if err != nil {
		return err
	}
	defer docker.Close()
	ch, err := health.New(health.Options{Root: root, Thresholds: &th, Budget: budget, Docker: docker,
		Quota: quotaProbe(root), Store: storeFn})
	if err != nil {
		return err
	}
	r := ch.Collect(ctx)
	if err := e.print(r, func(w io.Writer) { printHealth(w, r) }); err != nil {
		return err
	}
	if r.Status.Failing() {
		return &exitError{code: exitFailed}
	}
	return nil
}

// healthSettings reads the thresholds and the docker cache TTL.
func healthSettings(ctx context.Context, st *store.Store) (health.Thresholds, time.Duration, error) {
	var th health.Thresholds
	var ttl time.Duration
	for _, f := range []struct {
		key string
		dst *float64
	}{
		{"health_disk_free_warn_percent", &th.DiskFreeWarnPercent}, {"health_disk_free_critical_percent", &th.DiskFreeCriticalPercent},
		{"health_memory_available_warn_percent", &th.MemoryAvailableWarnPercent},
		{"health_memory_available_critical_percent", &th.MemoryAvailableCriticalPercent},
		{"health_load_per_core_warn", &th.LoadPerCoreWarn}, {"health_load_per_core_critical", &th.LoadPerCoreCritical},
		{"health_docker_cache_ttl", nil},
	} {
		s, err := settings.Lookup(f.key)
		if err != nil {
			return th, 0, err
		}
		stored, ok, err := st.Setting(ctx, f.key)
		if err != nil {
			return th, 0, err
		}
		v, err := settings.Resolve(s, stored, ok)
		if err != nil {
			return th, 0, err
		}
		if f.dst != nil {
			*f.dst = v.Float()
		} else {
			ttl = v.Duration()
		}
	}
	return th, ttl, nil
}

// quotaProbe asks the kernel now, as xfs.Open does at every start: the
// root's filesystem and its project quota state (Q_XGETQSTATV).
func quotaProbe(root string) health.QuotaFunc {
	return func(context.Context) (health.QuotaState, error) {
		var sfs unix.Statfs_t
		if err := unix.Statfs(root, &sfs); err != nil {
			return health.QuotaState{}, &health.FixError{Err: fmt.Errorf("statfs %s: %w", root, err),
				Fix: "check that the sandbox root exists and is mounted"}
		}
		onXFS := sfs.Type == unix.XFS_SUPER_MAGIC
		fs, err := xfs.Open(root)
		if err == nil {
			fs.Close()
			on := true
			return health.QuotaState{Kind: "xfs", OnXFS: true, Accounting: &on, Enforcement: &on}, nil
		}
		var un *quota.UnsupportedError
		if !errors.As(err, &un) {
			return health.QuotaState{}, err
		}
		s := health.QuotaState{Kind: "fallback", Reason: un.Short, Fix: un.Fix, OnXFS: onXFS}
		if onXFS {
			s.Reason = un.Reason
			// xfs.Open names what it found in Short; these two are the
			// mount's quota flags, the other cases leave them unknown.
			on, off := true, false
			switch {
			case strings.Contains(un.Short, "not enforced"):
				s.Accounting, s.Enforcement = &on, &off
			case strings.Contains(un.Short, "without prjquota"):
				s.Accounting, s.Enforcement = &off, &off
			}
		}
		return s, nil
	}
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
