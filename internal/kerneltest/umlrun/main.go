// Command umlrun runs one program inside the user-mode Linux test kernel with
// a scratch XFS device, e.g. a test binary's benchmarks:
//
//	go test -c -o /tmp/xfs.test ./quota/xfs
//	go run ./internal/kerneltest/umlrun /tmp/xfs.test -test.run '^$' -test.bench Kernel
//
// It prints the program's output and exits with its status.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/xfsq/xfsq/internal/kerneltest"
)

func main() {
	mem := flag.String("mem", "768M", "memory of the test kernel")
	timeout := flag.Duration("timeout", 30*time.Minute, "give up after this long")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: umlrun [-mem 768M] [-timeout 30m] PROGRAM [ARGS…]\n"+
			"Boots linux.uml (apt-get install %s) with the host's / as root and runs PROGRAM as init.\n", kerneltest.Packages)
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	wd, _ := os.Getwd()
	res, err := kerneltest.Boot{Binary: flag.Arg(0), Args: flag.Args()[1:], Dir: wd, Mem: *mem, Timeout: *timeout}.Run()
	os.Stdout.Write(res.Output)
	if err != nil {
		fmt.Fprintln(os.Stderr, "umlrun:", err)
		os.Exit(1)
	}
	os.Exit(res.ExitCode)
}
