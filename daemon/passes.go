package daemon

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/xfsq/xfsq/sandbox"
)

// PassActor is the journal's actor for what the scheduled passes do: no
// token asked for it.
const PassActor = "xfsq-serve/scheduled"

// Passes drives the scheduled passes of xfsq serve (the hourly snapshot,
// the sweep when sweep_interval is set) on the goroutine that calls Run,
// never on a request's. The library decides everything about a pass
// (Manager.RunPass: due or not, one at a time across processes, background
// priority on its own threads, stopping between entries when cancelled);
// this only keeps time and logs.
type Passes struct {
	Root *sandbox.Root
	Log  *slog.Logger
	// Tick is the longest Run sleeps before it looks at the passes again,
	// so that a changed interval setting takes effect within a tick; zero
	// is a minute.
	Tick time.Duration
	// Warm, if set, is called once the first round of passes is over and
	// again after every round in which a pass ran (Server.Warm): a pass
	// changes every project, and without it the first readers after the
	// pass would each wait for what it made stale.
	Warm func(context.Context) error
}

// Run settles what an earlier process left pending, then runs each pass
// when it is due until ctx is cancelled (SIGTERM), when it returns nil
// once the pass under way has stopped between entries. A pass that fails
// is logged and tried again when next due; nothing stops Run but ctx.
func (p *Passes) Run(ctx context.Context) error {
	ctx = sandbox.WithActor(ctx, PassActor)
	if n, err := p.Settle(ctx); err != nil && ctx.Err() == nil {
		p.log().Error("settle the deletions interrupted before this start", "error", err)
	} else if n > 0 {
		p.log().Info("settled deletions interrupted before this start", "records", n)
	}
	tick := p.Tick
	if tick <= 0 {
		tick = time.Minute
	}
	for first := true; ; first = false {
		outs, _ := p.RunOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if p.Warm != nil && (first || slices.ContainsFunc(outs, func(o sandbox.PassOutcome) bool { return o.Ran })) {
			start := time.Now()
			if err := p.Warm(ctx); err != nil && ctx.Err() == nil {
				p.log().Warn("warming the read cache failed: the next requests read the store themselves", "error", err)
			} else if err == nil {
				p.log().Info("read cache warm", "duration_seconds", time.Since(start).Seconds())
			}
		}
		wait := tick
		for _, o := range outs {
			if !o.NextAt.IsZero() {
				wait = min(wait, max(time.Until(o.NextAt), time.Second))
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// Settle settles the deletions an earlier, interrupted process journalled
// as pending (done if gone, failed if still there), so that none is left
// unsettled past a start; Run calls it first.
func (p *Passes) Settle(ctx context.Context) (int, error) {
	return p.Root.SettleInterrupted(sandbox.WithActor(ctx, PassActor))
}

// RunOnce runs each pass that is due, once, and says what each did; the
// error joins the passes' errors. Run calls it every tick; tests call it
// alone.
func (p *Passes) RunOnce(ctx context.Context) ([]sandbox.PassOutcome, error) {
	ctx = sandbox.WithActor(ctx, PassActor)
	var outs []sandbox.PassOutcome
	var errs []error
	for _, name := range sandbox.Passes {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		start := time.Now()
		out, err := p.Root.RunPass(ctx, name)
		outs = append(outs, out)
		switch {
		case err != nil && ctx.Err() != nil:
			p.log().Info("pass stopped between entries", "pass", name, "after_seconds", time.Since(start).Seconds())
			errs = append(errs, err)
		case err != nil:
			p.log().Error("pass failed", "pass", name, "error", err)
			errs = append(errs, err)
		case out.Ran:
			p.log().Info("pass done", "pass", name, "duration_seconds", time.Since(start).Seconds(), "next_at", out.NextAt)
		}
	}
	return outs, errors.Join(errs...)
}

func (p *Passes) log() *slog.Logger {
	if p.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Log
}
