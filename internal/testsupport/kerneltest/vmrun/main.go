// Command vmrun runs one program inside a kernel that enforces XFS project
// quotas, with a scratch disk for it, on whichever route works on this
// machine (Debian's kernel in QEMU, else user-mode Linux), e.g. a test
// binary's benchmarks:
//
//	go test -c -o /tmp/xfs.test ./quota/xfs
//	go run ./internal/testsupport/kerneltest/vmrun /tmp/xfs.test -test.run '^$' -test.bench Kernel
//
// It prints the route on stderr, then the program's output, and exits with
// the program's status; 125 (with each route's reason on stderr) when no
// route ran it to its end (none boots, or each that does crashes under it),
// so that a script can fall back without mistaking its own failure for
// that; 1 when the program did not finish in time.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/kerneltest"
	"github.com/xfsq/xfsq/units"
)

const noRoute = 125

func main() {
	mem := flag.String("mem", "", "memory of the guest (default: the route's, 2G for QEMU)")
	timeout := flag.Duration("timeout", 30*time.Minute, "give up after this long")
	quiet := flag.Bool("quiet", false, "do not print the route line")
	disk := flag.String("disk", "300M", "size of the sparse scratch disk (at least 300M, what mkfs.xfs takes)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: vmrun [-mem 2G] [-disk 300M] [-timeout 30m] [-quiet] PROGRAM [ARGS…]\n"+
			"Boots a kernel with XFS project quotas (apt-get install %s) with the host's / as root\n"+
			"and a scratch disk in $XFSQ_KERNELTEST_DEVICE, and runs PROGRAM there.\n", kerneltest.Packages)
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	diskBytes, err := units.ParseSize(*disk)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vmrun: -disk:", err)
		os.Exit(2)
	}
	wd, _ := os.Getwd()
	res, err := kerneltest.Boot{Binary: flag.Arg(0), Args: flag.Args()[1:], Dir: wd, Mem: *mem, Disk: int64(diskBytes), Timeout: *timeout}.Run()
	if res.Route.Route != "" && !*quiet {
		fmt.Fprintln(os.Stderr, "vmrun:", res.Route)
	}
	os.Stdout.Write(res.Output)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vmrun:", err)
		if res.Route.Route == "" {
			os.Exit(noRoute)
		}
		os.Exit(1)
	}
	os.Exit(res.ExitCode)
}
