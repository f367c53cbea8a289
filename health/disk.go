package health

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/xfsq/xfsq/area"
	"golang.org/x/sys/unix"
)

type diskCollector struct {
	root string
	th   Thresholds
}

func (d *diskCollector) collect(ctx context.Context) (*DiskPart, error) {
	p := &DiskPart{Part: Part{Status: OK}}
	paths := []DiskPath{{Path: d.root}}
	// Any area base may be a mount of its own (a fast disk for cache/,
	// tmpfs for scratch/), so each gets its statfs.
	for _, a := range area.Bases {
		paths = append(paths, DiskPath{Path: filepath.Join(d.root, a), Area: a})
	}
	var failed int
	devs := make([]uint64, len(paths)) // each path's st_dev, to tell a base that is no mount of its own
	for i := range paths {
		if ctx.Err() != nil {
			return p, ctx.Err()
		}
		dp := &paths[i]
		var s unix.Statfs_t
		if err := unix.Statfs(dp.Path, &s); err != nil {
			failed++
			dp.Error = fmt.Sprintf("statfs %s: %v", dp.Path, err)
			fix := "check that the sandbox root exists and is mounted"
			if dp.Area != "" {
				fix = "initialise the root " + d.root + " again (that creates " + dp.Area + "/)"
			}
			if p.Status != Error {
				p.Fix = fix // the first failure's fix, over any low-space advice
			}
			judge(&p.Part, Error, dp.Error)
			continue
		}
		var st unix.Stat_t
		if err := unix.Stat(dp.Path, &st); err == nil {
			devs[i] = st.Dev
			dp.SameFilesystemAsRoot = i > 0 && paths[0].Error == "" && st.Dev == devs[0]
		}
		bs := uint64(s.Bsize)
		dp.TotalBytes, dp.FreeBytes, dp.AvailableBytes = s.Blocks*bs, s.Bfree*bs, s.Bavail*bs
		dp.TotalInodes, dp.FreeInodes = s.Files, s.Ffree
		if dp.TotalBytes > 0 {
			dp.FreePercent = round2(float64(dp.AvailableBytes) * 100 / float64(dp.TotalBytes))
		}
		if dp.TotalInodes > 0 {
			f := round2(float64(dp.FreeInodes) * 100 / float64(dp.TotalInodes))
			dp.FreeInodesPercent = &f
		}
		d.judge(p, dp)
	}
	p.Paths = paths
	if failed > 0 && p.Status == Error {
		// Keep the figures that were read, but say the part is incomplete.
		p.Error = fmt.Sprintf("disk: %d of %d paths could not be read: %s", failed, len(paths), p.Reason)
		p.Reason = ""
	}
	return p, nil
}

func (d *diskCollector) judge(p *DiskPart, dp *DiskPath) {
	where := dp.Path
	check := func(what string, pct float64) {
		switch {
		case pct < d.th.DiskFreeCriticalPercent:
			judge(&p.Part, Critical, fmt.Sprintf("%.1f%% of %s available on %s (critical below %g%%)", pct, what, where, d.th.DiskFreeCriticalPercent))
		case pct < d.th.DiskFreeWarnPercent:
			judge(&p.Part, Warn, fmt.Sprintf("%.1f%% of %s available on %s (warn below %g%%)", pct, what, where, d.th.DiskFreeWarnPercent))
		}
	}
	if dp.TotalBytes > 0 {
		check("space", dp.FreePercent)
	}
	if dp.FreeInodesPercent != nil {
		check("inodes", *dp.FreeInodesPercent)
	}
	if p.Status == Warn || p.Status == Critical { // an error's fix stays
		p.Fix = "the report shows which trees fill it; a dry run of a sweep of every project shows what retention would free"
	}
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }
