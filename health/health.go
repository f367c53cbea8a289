// Package health answers "is this host fit to run sandboxes?": free space
// and inodes under the sandbox root, CPU load, memory, the Docker engine, the
// quota backend and the store. It owns the collectors and their thresholds;
// the answer's shape is the wire's (api/v1's Health and its parts, here by
// alias), which `xfsq health` prints and GET /v1/system/health answers as
// it is.
//
// Each source has its own small collector, node_exporter style: they run
// concurrently, each within its own time budget, and each fails on its own,
// so a dead Docker daemon is one part in status "error" beside a disk part
// that still answers.
//
// It must never write anything, never walk a tree (statfs only: a walk of a
// tenant's tree is what inventory is for) and never block past its budget:
// a collector stuck in a syscall (statfs on a hung mount, a daemon that
// accepts and never replies) is abandoned at its budget and reported as
// timed out, and Collect returns. It must not import project, files, sweep
// or cmd: what it needs from the quota backend and the store is injected as
// functions, so dependencies stay one-way.
package health

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	apiv1 "github.com/xfsq/xfsq/api/v1"
)

// Status of one part, and of the whole answer (the worst part): the
// wire's (api/v1), as every type of the answer is, so that the server
// encodes the answer as it is. Error means the part could not be measured
// at all: the figures are missing, not bad.
type Status = apiv1.HealthStatus

const (
	OK       = apiv1.HealthOK
	Warn     = apiv1.HealthWarn
	Critical = apiv1.HealthCritical
	Error    = apiv1.HealthError
)

func rank(s Status) int {
	switch s {
	case OK:
		return 0
	case Warn:
		return 1
	case Critical:
		return 2
	case Error:
		return 3
	}
	return 3 // an unknown status is no reason for comfort
}

// Worse returns the worse of a and b.
func Worse(a, b Status) Status {
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// Failing reports whether s should fail a check (`xfsq health` exits 1).
func Failing(s Status) bool { return s == Critical || s == Error }

// The answer and its parts (api/v1's, by alias).
type (
	// Part is what every part of the answer carries besides its figures.
	Part = apiv1.Part
	// Report is the whole answer.
	Report = apiv1.Health
	// Thresholds turn figures into warn and critical. They are the
	// settings health_* (package settings); the zero value is not usable:
	// start from DefaultThresholds.
	Thresholds = apiv1.HealthThresholds
	DiskPart   = apiv1.DiskPart
	DiskPath   = apiv1.DiskPath
	CPUPart    = apiv1.CPUPart
	MemoryPart = apiv1.MemoryPart
	DockerPart = apiv1.DockerPart
	QuotaPart  = apiv1.QuotaPart
	StorePart  = apiv1.StorePart
	Backend    = apiv1.Backend
)

// judge raises the part's status to s, keeping the reason of the worst.
func judge(p *Part, s Status, reason string) {
	if rank(s) > rank(p.Status) {
		p.Status, p.Reason = s, reason
	}
}

// Parts lists the parts present, in the order they are printed.
func Parts(r Report) []NamedPart {
	var out []NamedPart
	add := func(name string, p *Part) {
		if p != nil {
			out = append(out, NamedPart{name, p})
		}
	}
	if r.Disk != nil {
		add("disk", &r.Disk.Part)
	}
	if r.CPU != nil {
		add("cpu", &r.CPU.Part)
	}
	if r.Memory != nil {
		add("memory", &r.Memory.Part)
	}
	if r.Docker != nil {
		add("docker", &r.Docker.Part)
	}
	if r.Quota != nil {
		add("quota", &r.Quota.Part)
	}
	if r.Store != nil {
		add("store", &r.Store.Part)
	}
	return out
}

// NamedPart is a part with its name.
type NamedPart struct {
	Name string
	*Part
}

// DefaultThresholds match the settings' defaults.
func DefaultThresholds() Thresholds {
	return Thresholds{DiskFreeWarnPercent: 15, DiskFreeCriticalPercent: 5,
		MemoryAvailableWarnPercent: 10, MemoryAvailableCriticalPercent: 5,
		LoadPerCoreWarn: 2, LoadPerCoreCritical: 4}
}

// ValidateThresholds refuses thresholds whose critical level is milder than warn:
// a status would then skip warn and go straight to critical, or never warn.
func ValidateThresholds(t Thresholds) error {
	switch {
	case t.DiskFreeCriticalPercent > t.DiskFreeWarnPercent:
		return fmt.Errorf("health_disk_free_critical_percent (%g) is above health_disk_free_warn_percent (%g): critical must be the lower", t.DiskFreeCriticalPercent, t.DiskFreeWarnPercent)
	case t.MemoryAvailableCriticalPercent > t.MemoryAvailableWarnPercent:
		return fmt.Errorf("health_memory_available_critical_percent (%g) is above health_memory_available_warn_percent (%g): critical must be the lower", t.MemoryAvailableCriticalPercent, t.MemoryAvailableWarnPercent)
	case t.LoadPerCoreCritical < t.LoadPerCoreWarn:
		return fmt.Errorf("health_load_per_core_critical (%g) is below health_load_per_core_warn (%g): critical must be the higher", t.LoadPerCoreCritical, t.LoadPerCoreWarn)
	}
	return nil
}

// Options configure a Checker. Zero values take the defaults named.
type Options struct {
	// Root is the sandbox root; without it there is no disk part.
	Root string
	// ProcRoot is where procfs is mounted (default /proc); tests point it at fixtures.
	ProcRoot string
	// Thresholds default to DefaultThresholds().
	Thresholds *Thresholds
	// Budget is each part's time budget (default 2s). A part that has not
	// answered by then is reported as timed out.
	Budget time.Duration
	// CPUSampleInterval is how long the first Collect measures CPU busy
	// over (default 200ms; negative: report busy as unknown until the
	// second Collect). Later calls measure since the previous call.
	CPUSampleInterval time.Duration
	// Docker, if set, is the docker collector (NewDocker); nil: no docker part.
	Docker *Docker
	// Quota, if set, reports the quota backend in force; nil: no quota part.
	Quota QuotaFunc
	// Store, if set, runs a trivial query on the store; nil: no store part.
	Store StoreFunc
}

// Checker collects the answer. It is safe for concurrent use and meant to
// live as long as the process: it keeps the previous CPU sample and the
// Docker disk-usage cache.
type Checker struct {
	o    Options
	th   Thresholds
	disk *diskCollector
	cpu  *cpuCollector
	mem  *memCollector
}

const (
	defaultBudget    = 2 * time.Second
	defaultCPUSample = 200 * time.Millisecond
	defaultProcRoot  = "/proc"
)

// New makes a Checker.
func New(o Options) (*Checker, error) {
	if o.Budget <= 0 {
		o.Budget = defaultBudget
	}
	if o.ProcRoot == "" {
		o.ProcRoot = defaultProcRoot
	}
	if o.CPUSampleInterval == 0 {
		o.CPUSampleInterval = defaultCPUSample
	}
	th := DefaultThresholds()
	if o.Thresholds != nil {
		th = *o.Thresholds
	}
	if err := ValidateThresholds(th); err != nil {
		return nil, err
	}
	c := &Checker{o: o, th: th,
		cpu: &cpuCollector{procRoot: o.ProcRoot, firstSample: o.CPUSampleInterval, th: th},
		mem: &memCollector{procRoot: o.ProcRoot, th: th}}
	if o.Root != "" {
		c.disk = &diskCollector{root: o.Root, th: th}
	}
	return c, nil
}

// Budget is each part's time budget.
func (c *Checker) Budget() time.Duration { return c.o.Budget }

// Thresholds are the levels the Checker judges by (exported to metrics, so
// that an alert rule compares against the same levels as xfsq health).
func (c *Checker) Thresholds() Thresholds { return c.th }

// Collect runs every collector concurrently and returns when all have
// answered or run out of budget, whichever is first: never much later than
// the budget, whatever a source does.
func (c *Checker) Collect(ctx context.Context) Report {
	start := time.Now()
	r := Report{CheckedAt: start.UTC().Truncate(time.Millisecond)}
	var wg sync.WaitGroup
	b := c.o.Budget
	if c.disk != nil {
		wg.Go(func() {
			r.Disk = measure(ctx, b, "disk", timeoutFix["disk"], c.disk.collect)
			if r.Disk.Paths == nil {
				r.Disk.Paths = []DiskPath{} // given up: still the array the API promises
			}
		})
	}
	wg.Go(func() { r.CPU = measure(ctx, b, "cpu", timeoutFix["proc"], c.cpu.collect) })
	wg.Go(func() { r.Memory = measure(ctx, b, "memory", timeoutFix["proc"], c.mem.collect) })
	if d := c.o.Docker; d != nil {
		wg.Go(func() { r.Docker = measure(ctx, b, "docker", d.timeoutFix(), d.collect) })
	}
	if q := c.o.Quota; q != nil {
		wg.Go(func() { r.Quota = measure(ctx, b, "quota", timeoutFix["quota"], quotaCollector(q)) })
	}
	if s := c.o.Store; s != nil {
		wg.Go(func() { r.Store = measure(ctx, b, "store", timeoutFix["store"], storeCollector(s)) })
	}
	wg.Wait()
	r.Status = OK
	for _, p := range Parts(r) {
		r.Status = Worse(r.Status, p.Status)
	}
	r.DurationSeconds = time.Since(start).Seconds()
	th := c.th
	r.Thresholds = &th
	return r
}

var timeoutFix = map[string]string{
	"disk":  "a filesystem under the root does not answer statfs: check its mount (a hung network or FUSE mount?) and the kernel log",
	"proc":  "/proc did not answer: check that procfs is mounted and the host is not stalled",
	"quota": "the quota check did not answer: check the root's filesystem and the kernel log",
	"store": "the store did not answer: check that the database is up and reachable (for PostgreSQL: pg_isready)",
}

// FixError is an error with what the operator should do about it.
type FixError struct {
	Err error
	Fix string
}

func (e *FixError) Error() string { return e.Err.Error() }
func (e *FixError) Unwrap() error { return e.Err }

func withFix(err error, fix string) error { return &FixError{Err: err, Fix: fix} }

// header is a part's Part, which every part type (api/v1's DiskPart,
// CPUPart, …) embeds as its first field: the wire's types can carry no
// method of this package's to reach it.
func header[T any](p *T) *Part {
	return reflect.ValueOf(p).Elem().Field(0).Addr().Interface().(*Part)
}

// measure runs fn within budget and abandons it there: fn gets a context
// that ends at the budget, but a collector stuck in a syscall cannot see
// it, so measure does not wait for it either. The abandoned goroutine ends
// when its syscall does; it writes only to its own buffered channel.
func measure[T any](ctx context.Context, budget time.Duration, name, fixOnTimeout string, fn func(context.Context) (*T, error)) *T {
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	start := time.Now()
	type result struct {
		p   *T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		p, err := fn(ctx)
		ch <- result{p, err}
	}()
	var res result
	select {
	case res = <-ch:
	case <-ctx.Done():
		res.err = withFix(fmt.Errorf("%s: no answer within %s: %w", name, budget, ctx.Err()), fixOnTimeout)
	}
	p := res.p
	if p == nil {
		p = new(T)
	}
	h := header(p)
	if h.Status == "" {
		h.Status = OK
	}
	if res.err != nil {
		h.Status, h.Reason = Error, ""
		h.Error = res.err.Error()
		var fe *FixError
		if errors.As(res.err, &fe) {
			h.Fix = fe.Fix
		}
		if errors.Is(res.err, context.DeadlineExceeded) && h.Fix == "" {
			h.Fix = fixOnTimeout
		}
	}
	h.DurationSeconds = time.Since(start).Seconds()
	return p
}
