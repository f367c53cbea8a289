package health

import (
	"context"
	"strings"
	"testing"
	"time"
)

func fixture(name string) string { return "testdata/" + name }

// Each fixture is a proc tree; the cpu and memory parts are judged from it
// alone, and a fixture missing a file fails only the part that reads it.
func TestHostPartsFromProcFixtures(t *testing.T) {
	cases := []struct {
		fixture             string
		cpu, mem            Status
		load5               float64
		cores               int
		loadPerCore         float64
		memTotal, memAvail  uint64
		swapTotal, swapFree uint64
		errPart, errWord    string
	}{
		{fixture: "idle", cpu: OK, mem: OK, load5: 0.4, cores: 4, loadPerCore: 0.1,
			memTotal: 16384000 << 10, memAvail: 12288000 << 10, swapTotal: 2097152 << 10, swapFree: 2097152 << 10},
		{fixture: "loaded", cpu: Warn, mem: Warn, load5: 8.4, cores: 4, loadPerCore: 2.1,
			memTotal: 16384000 << 10, memAvail: 1228800 << 10, swapTotal: 2097152 << 10, swapFree: 1048576 << 10},
		{fixture: "overloaded", cpu: Critical, mem: Critical, load5: 17, cores: 4, loadPerCore: 4.25,
			memTotal: 16384000 << 10, memAvail: 409600 << 10},
		{fixture: "nomeminfo", cpu: OK, mem: Error, load5: 0.4, cores: 4, loadPerCore: 0.1, errPart: "memory", errWord: "meminfo"},
		{fixture: "noloadavg", cpu: Error, mem: OK, memTotal: 16384000 << 10, memAvail: 12288000 << 10, errPart: "cpu", errWord: "loadavg"},
	}
	for _, c := range cases {
		t.Run(c.fixture, func(t *testing.T) {
			ch, err := New(Options{ProcRoot: fixture(c.fixture), CPUSampleInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			r := ch.Collect(context.Background())
			if r.CPU.Status != c.cpu || r.Memory.Status != c.mem {
				t.Fatalf("cpu %s (%s%s), memory %s (%s%s); want %s, %s", r.CPU.Status, r.CPU.Reason, r.CPU.Error,
					r.Memory.Status, r.Memory.Reason, r.Memory.Error, c.cpu, c.mem)
			}
			if c.cpu != Error && (r.CPU.Load5 != c.load5 || r.CPU.Cores != c.cores || r.CPU.LoadPerCore != c.loadPerCore) {
				t.Errorf("cpu %+v; want load5 %g, %d cores, %g per core", *r.CPU, c.load5, c.cores, c.loadPerCore)
			}
			if c.mem != Error && (r.Memory.TotalBytes != c.memTotal || r.Memory.AvailableBytes != c.memAvail ||
				r.Memory.SwapTotalBytes != c.swapTotal || r.Memory.SwapFreeBytes != c.swapFree) {
				t.Errorf("memory %+v; want total %d, available %d, swap %d/%d", *r.Memory, c.memTotal, c.memAvail, c.swapTotal, c.swapFree)
			}
			for _, p := range Parts(r) {
				if p.Status == Warn || p.Status == Critical {
					if p.Reason == "" {
						t.Errorf("%s is %s without a reason", p.Name, p.Status)
					}
				}
				if p.Status != Error {
					continue
				}
				if p.Name != c.errPart || !strings.HasPrefix(p.Error, p.Name+": ") || !strings.Contains(p.Error, c.errWord) || p.Fix == "" {
					t.Errorf("%s failed with %q (fix %q); want only %s failing, naming %s, with a fix", p.Name, p.Error, p.Fix, c.errPart, c.errWord)
				}
			}
			want := Worse(c.cpu, c.mem)
			if r.Status != want {
				t.Errorf("overall %s; want the worst part, %s", r.Status, want)
			}
		})
	}
}

// Busy time is measured between two samples: unknown on the first answer
// when told not to wait, then from the /proc/stat deltas.
func TestCPUBusyFromStatDeltas(t *testing.T) {
	c := &cpuCollector{procRoot: fixture("idle"), firstSample: -1, th: DefaultThresholds()}
	p, err := c.collect(context.Background())
	if err != nil || p.BusyPercent != nil {
		t.Fatalf("first sample: busy %v, %v; want unknown", p.BusyPercent, err)
	}
	time.Sleep(10 * time.Millisecond)
	c.procRoot = fixture("busy") // per core: +300 user, +300 system, +400 idle
	p, err = c.collect(context.Background())
	if err != nil || p.BusyPercent == nil || *p.BusyPercent != 60 || p.BusyIntervalSeconds <= 0 {
		t.Fatalf("second sample: %+v, %v; want 60%% busy over a positive interval", p, err)
	}
	p, _ = c.collect(context.Background())
	if p.BusyPercent != nil {
		t.Errorf("no ticks between samples: busy %v; want unknown rather than 0 or NaN", *p.BusyPercent)
	}

	// Measuring on the first call waits the sample interval, within the budget.
	c = &cpuCollector{procRoot: "/proc", firstSample: 50 * time.Millisecond, th: DefaultThresholds()}
	start := time.Now()
	p, err = c.collect(context.Background())
	if err != nil || time.Since(start) < 50*time.Millisecond || p.BusyIntervalSeconds < 0.04 {
		t.Fatalf("real /proc with a first sample: %+v, %v after %s", p, err, time.Since(start))
	}
	if p.BusyPercent != nil && (*p.BusyPercent < 0 || *p.BusyPercent > 100) {
		t.Errorf("busy %g%%", *p.BusyPercent)
	}
}

func TestThresholdsValidate(t *testing.T) {
	th := DefaultThresholds()
	th.DiskFreeCriticalPercent = 20
	if _, err := New(Options{Thresholds: &th}); err == nil || !strings.Contains(err.Error(), "health_disk_free_critical_percent") {
		t.Errorf("critical above warn: %v; want an error naming the setting", err)
	}
}
