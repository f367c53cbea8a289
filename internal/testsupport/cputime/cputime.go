// Package cputime is the CPU time a benchmark's operations took: on a
// machine shared with other work the wall time of an op is mostly waiting
// for a core, and the process's CPU time is the figure that carries to a
// quiet one. For tests and benchmarks only.
package cputime

import (
	"syscall"
	"testing"
	"time"
)

// Now is the process's CPU time so far, user and system (getrusage).
func Now() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Report reports the CPU time per op since start as cpu-ms/op.
func Report(b *testing.B, start time.Duration) {
	b.ReportMetric(float64((Now()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}
