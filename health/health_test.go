package health

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestQuotaPartStatus(t *testing.T) {
	on, off := true, false
	cases := []struct {
		name     string
		state    QuotaState
		err      error
		want     Status
		enforced bool
	}{
		{"xfs enforcing", QuotaState{Kind: "xfs", OnXFS: true, Accounting: &on, Enforcement: &on}, nil, OK, true},
		{"ext4 enforcing", QuotaState{Kind: "ext4", Accounting: &on, Enforcement: &on}, nil, OK, true},
		{"ext4 enforcement off", QuotaState{Kind: "ext4", Accounting: &on, Enforcement: &off, Fix: "mount it with -o prjquota"}, nil, Critical, false},
		{"xfs enforcement off", QuotaState{Kind: "xfs", OnXFS: true, Accounting: &on, Enforcement: &off, Fix: "remount"}, nil, Critical, false},
		{"fallback by choice of filesystem", QuotaState{Kind: "fallback", Reason: "ext4: no project quota"}, nil, OK, false},
		{"fallback on XFS", QuotaState{Kind: "fallback", OnXFS: true, Reason: "mounted without prjquota", Fix: "mount it with -o prjquota",
			Accounting: &off, Enforcement: &off}, nil, Warn, false},
		{"probe failed", QuotaState{}, withFix(errors.New("statfs /r: no such file"), "mount it"), Error, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fn := quotaCollector(func(context.Context) (QuotaState, error) { return c.state, c.err })
			p := measure(context.Background(), time.Second, "quota", "", fn)
			if p.Status != c.want || p.Backend.Enforced != c.enforced {
				t.Fatalf("%+v; want %s, enforced %v", *p, c.want, c.enforced)
			}
			if c.want != OK && c.want != Error && (p.Reason == "" || p.Fix == "") {
				t.Errorf("%s without reason or fix: %+v", c.want, *p)
			}
			if c.want == Error && (!strings.HasPrefix(p.Error, "quota: ") || p.Fix != "mount it") {
				t.Errorf("error part: %+v", *p)
			}
			if c.want != Error && p.Backend.Kind != c.state.Kind {
				t.Errorf("backend %+v", p.Backend)
			}
		})
	}
}

func TestStorePart(t *testing.T) {
	p := measure(context.Background(), time.Second, "store", "", storeCollector(func(context.Context) error {
		time.Sleep(5 * time.Millisecond)
		return nil
	}))
	if p.Status != OK || !p.Reachable || p.LatencySeconds < 0.005 {
		t.Errorf("answering store: %+v", *p)
	}
	p = measure(context.Background(), time.Second, "store", "", storeCollector(func(context.Context) error {
		return errors.New("connect to the database: connection refused")
	}))
	if p.Status != Error || p.Reachable || !strings.HasPrefix(p.Error, "store: connect") || p.Fix == "" {
		t.Errorf("refusing store: %+v", *p)
	}
}

// A collector that ignores its context (a syscall stuck on a hung mount)
// is abandoned at the budget: Collect still returns on time.
func TestCollectReturnsAtBudgetWhateverACollectorDoes(t *testing.T) {
	stuck := make(chan struct{})
	defer close(stuck)
	const budget = 200 * time.Millisecond
	ch, err := New(Options{Root: makeRoot(t), Budget: budget, CPUSampleInterval: -1,
		Store: func(context.Context) error { <-stuck; return nil },
		Quota: func(context.Context) (QuotaState, error) { return QuotaState{Kind: "fallback"}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := ch.Collect(context.Background())
	if took := time.Since(start); took > budget+100*time.Millisecond {
		t.Errorf("Collect took %s with a %s budget", took, budget)
	}
	if r.Store.Status != Error || !strings.Contains(r.Store.Error, "store: no answer within 200ms") || !strings.Contains(r.Store.Fix, "database") {
		t.Errorf("stuck store: %+v", *r.Store)
	}
	if r.Disk.Status == Error || r.Quota.Status != OK || r.CPU.Status == Error || r.Memory.Status == Error {
		t.Errorf("the others: %+v", r)
	}
	if r.Status != Error {
		t.Errorf("overall %s", r.Status)
	}
}

// A daemon slower than the budget: the counts arrive, the first answer says
// the disk usage is still being computed, and the next one gets it from
// the one call that went on.
func TestDockerSlowDiskUsageServesTheNextAnswer(t *testing.T) {
	f := startFakeDaemon(t, 400*time.Millisecond)
	d, err := NewDocker(DockerOptions{Host: f.host})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const budget = 200 * time.Millisecond
	p := measure(context.Background(), budget, "docker", d.timeoutFix(), d.collect)
	if p.Status != Error || p.ContainersTotal != 3 || !strings.Contains(p.Error, "took longer than the budget") || p.DurationSeconds > (budget+50*time.Millisecond).Seconds() {
		t.Fatalf("first answer: %+v", *p)
	}
	time.Sleep(400 * time.Millisecond)
	p = measure(context.Background(), budget, "docker", d.timeoutFix(), d.collect)
	if p.Status != OK || p.ImagesBytes != 123456789 || f.dfCalls.Load() != 1 {
		t.Errorf("next answer: %+v after %d calls; want the first call's result", *p, f.dfCalls.Load())
	}
}

func TestWorse(t *testing.T) {
	order := []Status{OK, Warn, Critical, Error}
	for i, a := range order {
		for j, b := range order {
			if got := Worse(a, b); got != order[max(i, j)] {
				t.Errorf("Worse(%s, %s) = %s", a, b, got)
			}
		}
	}
	if !Failing(Critical) || !Failing(Error) || Failing(Warn) || Failing(OK) {
		t.Error("only critical and error fail")
	}
}

// header reaches the Part each part type embeds, the one measure fills
// in: a part type whose Part is not its first field fails here, not in
// an answer whose status is silently lost.
func TestHeaderIsTheEmbeddedPart(t *testing.T) {
	var (
		d DiskPart
		c CPUPart
		m MemoryPart
		k DockerPart
		q QuotaPart
		s StorePart
	)
	for i, pair := range [][2]*Part{{header(&d), &d.Part}, {header(&c), &c.Part}, {header(&m), &m.Part},
		{header(&k), &k.Part}, {header(&q), &q.Part}, {header(&s), &s.Part}} {
		if pair[0] != pair[1] {
			t.Errorf("part %d: header is not the embedded Part", i)
		}
	}
}
