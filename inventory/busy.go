package inventory

import (
	"runtime"

	"github.com/prometheus/procfs"
)

// machineBusy reports whether the machine's load average over the last
// minute is at least its CPUs: other work wants every CPU, and a walk
// that batches its stats (Options.BatchStat) is the faster there. A
// variable so that a test can say either.
var machineBusy = func() bool {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return false
	}
	la, err := fs.LoadAvg()
	return err == nil && la.Load1 >= float64(runtime.NumCPU())
}
