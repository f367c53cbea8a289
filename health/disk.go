package health

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/nomount"
)

type diskCollector struct {
	root string
	th   Thresholds

	mu sync.Mutex
	// inflight is the statfs still waiting on each path and what is
	// mounted there: never a second one. A filesystem that does not answer
	// (a hung network mount, a tenant's FUSE server on inbound/) holds one
	// thread, not one more at every health answer and every scrape; once it
	// is detached (umount -l), the path is asked afresh.
	inflight map[statfsKey]*statfsCall
}

// statfsKey is a path and the mount it is on, as the kernel holds it.
type statfsKey struct {
	path string
	mnt  uint64
}

// maxWaiting bounds the statfs calls left waiting on filesystems that do
// not answer at one path, all its mounts together, detached ones too (a
// detach does not let a waiting call go; only the server's end does): a
// tenant that mounts one such filesystem after another there must not
// take a thread with each, nor, by taking them all, the other paths'
// figures.
const maxWaiting = 4

// statfsCall is one statfs of a path; done is closed once s and err are set.
type statfsCall struct {
	done chan struct{}
	dev  uint64 // the device asked, to name it while it does not answer
	s    unix.Statfs_t
	err  error
}

// answered is a call that failed before asking anything.
func answered(err error) *statfsCall {
	c := &statfsCall{done: make(chan struct{}), err: err}
	close(c.done)
	return c
}

// statfs asks path's filesystem for its figures, or joins the ask still
// waiting on the same mount there. The path is looked up once: the mount
// a call is filed under is the one it asks (a tenant's mount landing on
// the path between two lookups would otherwise be asked under the mount
// that was there before, and every later ask would join it).
func (d *diskCollector) statfs(path string) *statfsCall {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return answered(err)
	}
	c := &statfsCall{done: make(chan struct{})}
	key := statfsKey{path: path}
	var sx unix.Statx_t
	if unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_MNT_ID, &sx) == nil {
		key.mnt, c.dev = sx.Mnt_id, unix.Mkdev(sx.Dev_major, sx.Dev_minor)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if w, ok := d.inflight[key]; ok {
		unix.Close(fd)
		return w
	}
	if waiting := d.waitingAt(path); len(waiting) >= maxWaiting {
		unix.Close(fd)
		return answered(fmt.Errorf("%d statfs calls already wait on filesystems mounted there (devices %s) that do not answer; not asking another",
			len(waiting), strings.Join(waiting, ", ")))
	}
	if d.inflight == nil {
		d.inflight = map[statfsKey]*statfsCall{}
	}
	d.inflight[key] = c
	go func() {
		c.err = unix.Fstatfs(fd, &c.s)
		unix.Close(fd)
		d.mu.Lock()
		delete(d.inflight, key)
		d.mu.Unlock()
		close(c.done)
	}()
	return c
}

// waitingAt names the devices of the statfs calls waiting at path, on any
// mount. d.mu is held.
func (d *diskCollector) waitingAt(path string) []string {
	var devs []string
	for k, c := range d.inflight {
		if k.path == path {
			devs = append(devs, deviceName(c.dev))
		}
	}
	slices.Sort(devs)
	return devs
}

// deviceName is a device as findmnt names it, major:minor (a FUSE
// connection's directory in /sys/fs/fuse/connections is its minor).
func deviceName(dev uint64) string {
	return fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev))
}

// pathWait bounds collect's wait for the paths' answers to three quarters
// of what is left of its budget, so that the figures read are reported,
// and a path that does not answer named, before the part is given up.
func pathWait(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok {
		return context.WithTimeout(ctx, time.Until(dl)*3/4)
	}
	return context.WithCancel(ctx) // no budget: ctx alone ends the wait
}

func (d *diskCollector) collect(ctx context.Context) (*DiskPart, error) {
	p := &DiskPart{Part: Part{Status: OK}}
	paths := []DiskPath{{Path: d.root}}
	// Any area base may be a mount of its own (a fast disk for cache/,
	// tmpfs for scratch/), so each gets its statfs.
	for _, a := range area.Bases {
		paths = append(paths, DiskPath{Path: filepath.Join(d.root, a), Area: a})
	}
	calls := make([]*statfsCall, len(paths))
	for i := range paths {
		calls[i] = d.statfs(paths[i].Path)
	}
	wait, stop := pathWait(ctx)
	defer stop()
	var failed int
	devs := make([]uint64, len(paths)) // each path's st_dev, to tell a base that is no mount of its own
	for i := range paths {
		dp, c := &paths[i], calls[i]
		select {
		case <-c.done:
		case <-wait.Done():
			if ctx.Err() != nil {
				return p, ctx.Err()
			}
		}
		fix, err := d.answer(c, dp)
		if err != nil {
			failed++
			dp.Error = err.Error()
			if p.Status != Error {
				p.Fix = fix // the first failure's fix, over any low-space advice
			}
			judge(&p.Part, Error, dp.Error)
			continue
		}
		// As the kernel holds it: a mount there is not asked again.
		var st unix.Stat_t
		if err := nomount.Lstat(unix.AT_FDCWD, dp.Path, &st); err == nil {
			devs[i] = st.Dev
			dp.SameFilesystemAsRoot = i > 0 && paths[0].Error == "" && st.Dev == devs[0]
		}
		s := &c.s
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

// answer is the fix for c's error and the error, if it failed or has not
// answered yet.
func (d *diskCollector) answer(c *statfsCall, dp *DiskPath) (fix string, err error) {
	select {
	case <-c.done:
	default:
		return "the filesystem mounted there does not answer (a hung network or FUSE mount; on inbound/, perhaps a tenant's): " +
				"check it with findmnt " + dp.Path + " and the kernel log. A detach (umount -l) does not let xfsq's question go; " +
				"a hung FUSE server's end does, or echo 1 > /sys/fs/fuse/connections/" + strconv.FormatUint(uint64(unix.Minor(c.dev)), 10) + "/abort",
			fmt.Errorf("statfs %s: no answer yet from device %s", dp.Path, deviceName(c.dev))
	}
	if c.err == nil {
		return "", nil
	}
	fix = "check that the sandbox root exists and is mounted"
	if dp.Area != "" {
		fix = "initialise the root " + d.root + " again (that creates " + dp.Area + "/)"
	}
	return fix, fmt.Errorf("statfs %s: %v", dp.Path, c.err)
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
