package kerneltest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Boot runs one program as the init of a user-mode Linux kernel whose root
// is the host's / (hostfs), with a fresh scratch image attached as /dev/ubda.
// The program sees XFSQ_KERNELTEST_INSIDE=1 and XFSQ_KERNELTEST_DEVICE.
type Boot struct {
	Binary  string
	Args    []string
	Env     []string // extra KEY=VALUE for the program
	Dir     string   // working directory inside; hostfs makes host paths valid
	Mem     string   // kernel memory, default 768M
	Timeout time.Duration
}

// BootResult is what the program printed and its exit status; Console is the
// kernel's own output, for diagnosing a boot that went wrong.
type BootResult struct {
	Output   []byte
	ExitCode int
	Console  []byte
}

// Run boots the kernel and waits for the program; an error means the boot
// itself failed (the program's own failure is in ExitCode).
func (b Boot) Run() (BootResult, error) {
	work, err := os.MkdirTemp("", "xfsq-uml-")
	if err != nil {
		return BootResult{}, err
	}
	defer os.RemoveAll(work)
	img := filepath.Join(work, "scratch.img")
	if err := makeImage(img); err != nil {
		return BootResult{}, err
	}
	outFile, rcFile := filepath.Join(work, "output"), filepath.Join(work, "rc")
	binary, err := filepath.Abs(b.Binary)
	if err != nil {
		return BootResult{}, err
	}
	var script strings.Builder
	script.WriteString("#!/bin/sh\n")
	script.WriteString("export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/go/bin\n")
	script.WriteString("mount -t proc proc /proc\nmount -t sysfs sys /sys\n")
	script.WriteString("[ -e /dev/ubda ] || mount -t devtmpfs dev /dev\n")
	env := append([]string{envInside + "=1", envDevice + "=/dev/ubda", "HOME=/root", "TMPDIR=" + work}, b.Env...)
	for _, kv := range env {
		script.WriteString("export " + shellQuote(kv) + "\n")
	}
	if b.Dir != "" {
		script.WriteString("cd " + shellQuote(b.Dir) + "\n")
	}
	script.WriteString(shellQuote(binary))
	for _, a := range b.Args {
		script.WriteString(" " + shellQuote(a))
	}
	fmt.Fprintf(&script, " >%s 2>&1\necho $? >%s\nsync\npoweroff -f\n", shellQuote(outFile), shellQuote(rcFile))
	init := filepath.Join(work, "init.sh")
	if err := os.WriteFile(init, []byte(script.String()), 0o755); err != nil {
		return BootResult{}, err
	}
	mem := b.Mem
	if mem == "" {
		mem = "768M"
	}
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "linux.uml", "mem="+mem, "root=/dev/root", "rootfstype=hostfs",
		"rootflags=/", "rw", "init="+init, "ubd0="+img, "con=null", "con0=null,fd:1")
	cmd.Env = append(os.Environ(), "TMPDIR="+work) // where UML keeps its memory file
	// UML forks helper processes: kill the whole group on timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var console bytes.Buffer
	cmd.Stdout, cmd.Stderr = &console, &console
	runErr := cmd.Run()
	res := BootResult{Console: console.Bytes()}
	res.Output, _ = os.ReadFile(outFile)
	rc, err := os.ReadFile(rcFile)
	if err != nil {
		if ctx.Err() != nil {
			return res, fmt.Errorf("test kernel did not finish within %s; program output:\n%s", timeout, res.Output)
		}
		return res, fmt.Errorf("test kernel stopped before the program finished (%v); console:\n%s", runErr, tail(res.Console, 4000))
	}
	res.ExitCode, err = strconv.Atoi(strings.TrimSpace(string(rc)))
	if err != nil {
		return res, fmt.Errorf("bad exit status %q from the test kernel", rc)
	}
	return res, nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
