package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/xfsq/xfsq/metrics"
	"github.com/xfsq/xfsq/sandbox"
)

// JournalCheckpointEvery is how often JournalCheckpoints moves the
// checkpoint: a restarted server's first scrape then sums at most this
// much of the journal, and the settle time, beyond it.
const JournalCheckpointEvery = 5 * time.Minute

// JournalCheckpoints keeps this host's journal checkpoint (the metrics
// counters' totals as of a position in the journal) on the goroutine that
// calls Run, beside the passes and never on a request's: the first call
// on a host that has none sums its whole journal, the later ones the
// records since.
type JournalCheckpoints struct {
	Root *sandbox.Root
	Log  *slog.Logger
	// Every is the wait between two; zero is JournalCheckpointEvery.
	Every time.Duration
}

// Run moves the checkpoint at once and then every Every until ctx is
// cancelled; one that fails is logged and tried again at the next.
func (j *JournalCheckpoints) Run(ctx context.Context) {
	every := j.Every
	if every <= 0 {
		every = JournalCheckpointEvery
	}
	for {
		j.Once(ctx)
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Once moves the checkpoint once, and logs a failure.
func (j *JournalCheckpoints) Once(ctx context.Context) {
	start := time.Now()
	moved, err := metrics.CheckpointJournal(ctx, j.Root)
	log := j.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	switch {
	case err != nil && ctx.Err() == nil:
		log.Warn("keeping the journal's checkpoint failed: a restart's first scrape sums the records since the last one", "error", err)
	case moved:
		log.Debug("journal checkpoint moved", "duration_seconds", time.Since(start).Seconds())
	}
}
