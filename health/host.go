package health

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/procfs"
)

func procFix(procRoot string) string {
	return "check that procfs is mounted at " + procRoot + " (mount -t proc proc " + procRoot + ")"
}

// cpuCollector keeps the previous /proc/stat sample, so that busy time is
// measured over the interval between two answers, as top does. On the first
// answer there is no earlier sample: it takes one, waits firstSample and
// takes another (a one-shot `xfsq health` needs a figure, and 200ms of the
// budget is cheap); a negative firstSample reports busy as unknown instead,
// for callers that collect often and must answer fast.
type cpuCollector struct {
	procRoot    string
	firstSample time.Duration
	th          Thresholds

	mu     sync.Mutex
	prev   procfs.CPUStat
	prevAt time.Time
}

func (c *cpuCollector) sample() (procfs.Stat, time.Time, error) {
	fs, err := procfs.NewFS(c.procRoot)
	if err != nil {
		return procfs.Stat{}, time.Time{}, withFix(fmt.Errorf("cpu: %w", err), procFix(c.procRoot))
	}
	st, err := fs.Stat()
	if err != nil {
		return st, time.Time{}, withFix(fmt.Errorf("cpu: reading %s/stat: %w", c.procRoot, err), procFix(c.procRoot))
	}
	return st, time.Now(), nil
}

func (c *cpuCollector) collect(ctx context.Context) (*CPUPart, error) {
	fs, err := procfs.NewFS(c.procRoot)
	if err != nil {
		return nil, withFix(fmt.Errorf("cpu: %w", err), procFix(c.procRoot))
	}
	la, err := fs.LoadAvg()
	if err != nil {
		return nil, withFix(fmt.Errorf("cpu: reading %s/loadavg: %w", c.procRoot, err), procFix(c.procRoot))
	}
	st, at, err := c.sample()
	if err != nil {
		return nil, err
	}
	p := &CPUPart{Part: Part{Status: OK}, Load1: la.Load1, Load5: la.Load5, Load15: la.Load15, Cores: len(st.CPU)}
	if p.Cores == 0 {
		return p, withFix(fmt.Errorf("cpu: %s/stat lists no cpuN lines", c.procRoot), procFix(c.procRoot))
	}

	c.mu.Lock()
	prev, prevAt := c.prev, c.prevAt
	c.mu.Unlock()
	if prevAt.IsZero() && c.firstSample > 0 {
		select {
		case <-time.After(c.firstSample):
		case <-ctx.Done():
			return p, ctx.Err()
		}
		prev, prevAt = st.CPUTotal, at
		if st, at, err = c.sample(); err != nil {
			return p, err
		}
	}
	c.mu.Lock()
	// Two concurrent answers must not move the sample backwards.
	if at.After(c.prevAt) {
		c.prev, c.prevAt = st.CPUTotal, at
	}
	c.mu.Unlock()
	if !prevAt.IsZero() {
		p.BusyPercent = busy(prev, st.CPUTotal)
		p.BusyIntervalSeconds = round2(at.Sub(prevAt).Seconds())
	}

	p.LoadPerCore = round2(p.Load5 / float64(p.Cores))
	switch {
	case p.LoadPerCore >= c.th.LoadPerCoreCritical:
		judge(&p.Part, Critical, fmt.Sprintf("load %.2f per core over 5 minutes (critical at %g)", p.LoadPerCore, c.th.LoadPerCoreCritical))
	case p.LoadPerCore >= c.th.LoadPerCoreWarn:
		judge(&p.Part, Warn, fmt.Sprintf("load %.2f per core over 5 minutes (warn at %g)", p.LoadPerCore, c.th.LoadPerCoreWarn))
	}
	return p, nil
}

// busy is the non-idle share of the time between two samples; guest time
// is already inside user and nice, so it is not added again.
func busy(a, b procfs.CPUStat) *float64 {
	idle := func(s procfs.CPUStat) float64 { return s.Idle + s.Iowait }
	total := func(s procfs.CPUStat) float64 {
		return s.User + s.Nice + s.System + s.Idle + s.Iowait + s.IRQ + s.SoftIRQ + s.Steal
	}
	dt := total(b) - total(a)
	if dt <= 0 {
		return nil
	}
	f := round2((dt - (idle(b) - idle(a))) * 100 / dt)
	f = min(max(f, 0), 100)
	return &f
}

type memCollector struct {
	procRoot string
	th       Thresholds
}

func (m *memCollector) collect(context.Context) (*MemoryPart, error) {
	fs, err := procfs.NewFS(m.procRoot)
	if err != nil {
		return nil, withFix(fmt.Errorf("memory: %w", err), procFix(m.procRoot))
	}
	mi, err := fs.Meminfo()
	if err != nil {
		return nil, withFix(fmt.Errorf("memory: reading %s/meminfo: %w", m.procRoot, err), procFix(m.procRoot))
	}
	if mi.MemTotalBytes == nil || mi.MemAvailableBytes == nil || *mi.MemTotalBytes == 0 {
		return nil, withFix(fmt.Errorf("memory: %s/meminfo has no MemTotal or MemAvailable", m.procRoot),
			"MemAvailable needs Linux 3.14 or later; check that "+m.procRoot+" is a procfs")
	}
	p := &MemoryPart{Part: Part{Status: OK}, TotalBytes: *mi.MemTotalBytes, AvailableBytes: *mi.MemAvailableBytes}
	if mi.SwapTotalBytes != nil {
		p.SwapTotalBytes = *mi.SwapTotalBytes
	}
	if mi.SwapFreeBytes != nil {
		p.SwapFreeBytes = *mi.SwapFreeBytes
	}
	p.AvailablePercent = round2(float64(p.AvailableBytes) * 100 / float64(p.TotalBytes))
	switch {
	case p.AvailablePercent < m.th.MemoryAvailableCriticalPercent:
		judge(&p.Part, Critical, fmt.Sprintf("%.1f%% of memory available (critical below %g%%)", p.AvailablePercent, m.th.MemoryAvailableCriticalPercent))
	case p.AvailablePercent < m.th.MemoryAvailableWarnPercent:
		judge(&p.Part, Warn, fmt.Sprintf("%.1f%% of memory available (warn below %g%%)", p.AvailablePercent, m.th.MemoryAvailableWarnPercent))
	}
	return p, nil
}
