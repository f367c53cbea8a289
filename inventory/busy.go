package inventory

import (
	"runtime"

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
var machineBusy = func() bool {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return false
	}
	la, err := fs.LoadAvg()
	return err == nil && la.Load1 >= 2*float64(runtime.NumCPU())
}
