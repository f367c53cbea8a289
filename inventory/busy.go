package inventory

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/prometheus/procfs"
)

// machineBusy reports whether the machine is busy as the walk starts: its
// load average over the last minute at least twice its CPUs, other work
// wanting every CPU. A walk that batches its stats (Options.BatchStat) is
// the faster there. Twice, and not once: walks run one after another on a
// quiet machine (a benchmark's) make it about one a CPU themselves; and
// the instantaneous count of runnable threads (procs_running) swings from
// one to three on a quiet machine. A variable so that a test can say
// either.
var machineBusy = loadHigh

// loadHigh reads the load average at most once a second: `snapshot --all`
// walks thousands of small trees, one walk after another, and a minute's
// average does not move between them.
func loadHigh() bool {
	now := time.Now().UnixNano()
	if c := busyRead.Load(); c != nil && now-c.at < int64(time.Second) {
		return c.busy
	}
	busy := false
	if fs, err := procfs.NewDefaultFS(); err == nil {
		if la, err := fs.LoadAvg(); err == nil {
			busy = la.Load1 >= 2*float64(runtime.NumCPU())
		}
	}
	busyRead.Store(&busyReading{at: now, busy: busy})
	return busy
}

type busyReading struct {
	at   int64 // unix nanoseconds
	busy bool
}

var busyRead atomic.Pointer[busyReading]
