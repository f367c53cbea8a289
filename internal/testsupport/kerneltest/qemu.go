package kerneltest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// qemuRoute boots Debian's stock kernel in QEMU with the host's / shared
// over virtio-9p. Software emulation (TCG) works on any x86-64 host; KVM is
// used only after a probe boot answered, since a nested guest can hang in
// early boot.
type qemuRoute struct {
	kernel vmKernel
	accel  string // "kvm" or "tcg"
}

const qemuBinary = "qemu-system-x86_64"

// kvmProbeTimeout bounds the probe boot: a working KVM guest reaches its
// program in about a second, TCG in three or four. A variable, as is the
// device, for the harness's own tests.
var kvmProbeTimeout = 12 * time.Second

var kvmDevice = "/dev/kvm"

func (q *qemuRoute) kind() string { return "qemu" }
func (q *qemuRoute) name() string { return "qemu (" + q.accel + ")" }

func (q *qemuRoute) prepare() (string, error) {
	q.accel = "tcg"
	if !haveCommand(qemuBinary) {
		return "", fmt.Errorf("%s is not installed (apt-get install qemu-system-x86)", qemuBinary)
	}
	k, err := debianKernel()
	if err != nil {
		return "", err
	}
	q.kernel = k
	detail := "Debian kernel " + k.Version
	if ok, why := q.kvmWorks(); ok {
		q.accel = "kvm"
	} else if why != "" {
		detail += " (kvm: " + why + ")"
	}
	return detail, nil
}

// kvmWorks probes KVM once per host boot: the answer is kept in the cache
// directory under the host's boot ID, so only the first package pays.
func (q *qemuRoute) kvmWorks() (bool, string) {
	f, err := os.OpenFile(kvmDevice, os.O_RDWR, 0)
	if err != nil {
		return false, "" // no KVM: nothing to report, TCG is the plan
	}
	f.Close()
	bootID, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	memo := filepath.Join(cacheDir(), "kvm-probe-"+strings.TrimSpace(string(bootID)))
	if b, err := os.ReadFile(memo); err == nil {
		if v := strings.TrimSpace(string(b)); v != "ok" {
			return false, strings.TrimPrefix(v, "no: ")
		}
		return true, ""
	}
	probe := &qemuRoute{kernel: q.kernel, accel: "kvm"}
	res, err := bootOn(probe, Boot{Binary: "/bin/true", Timeout: kvmProbeTimeout})
	answer := "ok"
	if err != nil || res.ExitCode != 0 {
		why := fmt.Sprintf("probe boot did not answer within %s", kvmProbeTimeout)
		var ns *errNotStarted
		if errors.As(err, &ns) && !strings.HasPrefix(ns.reason, "no program started") {
			why = "probe boot failed: " + ns.reason
		}
		answer = "no: " + why
	}
	os.WriteFile(memo, []byte(answer+"\n"), 0o644)
	if answer != "ok" {
		return false, strings.TrimPrefix(answer, "no: ")
	}
	return true, ""
}

func (q *qemuRoute) device() string     { return "/dev/vda" }
func (q *qemuRoute) defaultMem() string { return "2G" }
func (q *qemuRoute) prelude() string    { return "" } // the initramfs mounted proc, sys and dev
func (q *qemuRoute) epilogue() string   { return "" } // the initramfs powers off

func (q *qemuRoute) command(w *bootWork) *exec.Cmd {
	args := []string{"-accel", q.accel}
	if q.accel == "kvm" {
		args = append(args, "-cpu", "host")
	}
	args = append(args,
		"-m", w.mem, "-smp", "2", "-nographic", "-nodefaults", "-no-user-config", "-no-reboot",
		"-serial", "file:"+w.console,
		"-kernel", q.kernel.Vmlinuz, "-initrd", q.kernel.Initrd,
		"-append", "console=ttyS0 panic=-1 quiet xfsq.run="+w.script,
		// The host's / read-write, so the test binary and every path it is
		// given are valid inside; remap keeps inode numbers of different
		// host filesystems apart.
		"-fsdev", "local,id=hostroot,path=/,security_model=passthrough,multidevs=remap",
		"-device", "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot",
		// A throwaway disk: no need to wait for the host to persist it.
		"-drive", "file="+w.image+",if=virtio,format=raw,cache=unsafe")
	return exec.Command(qemuBinary, args...)
}
