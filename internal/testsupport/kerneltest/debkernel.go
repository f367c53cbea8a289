package kerneltest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The VM route boots Debian's stock kernel (CONFIG_XFS_QUOTA=y) with a tiny
// initramfs made here from the kernel package's own modules and
// busybox-static: nothing comes from anywhere but Debian's packages on this
// machine, and nothing of it is committed.

// guestModules are what the guest needs before it can reach the host's
// files and the scratch disk; their dependencies are added from each
// module's own .modinfo.
var guestModules = []string{"virtio_pci", "virtio_blk", "9pnet_virtio", "9p", "crc32c_generic", "xfs"}

// ext4Modules are what ext4 cases need: ext4 (with crc16, mbcache and jbd2
// by its .modinfo) and the quota file format ext4's quota feature uses
// (quota_v2, with quota_tree). A kernel with them built in has no such
// files; it is told apart when a case mounts ext4, not here.
var ext4Modules = []string{"ext4", "quota_v2"}

// kernelMeta is the Debian package that pulls in the current stock kernel.
const kernelMeta = "linux-image-amd64"

// initramfsRecipe changes whenever what goes into the initramfs changes, so
// a cached one from an older recipe is rebuilt rather than trusted.
const initramfsRecipe = "xfsq-initramfs-2"

// vmKernel is a kernel and initramfs ready to boot.
type vmKernel struct {
	Version string // e.g. 6.1.0-57-amd64
	Vmlinuz string
	Initrd  string
}

// cacheDir is where the kernel and initramfs are kept between runs: once
// per machine, as the harness is run by every package and every CI run.
func cacheDir() string {
	if d := os.Getenv("XFSQ_KERNELTEST_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "xfsq", "kerneltest")
	}
	return filepath.Join(os.TempDir(), "xfsq-kerneltest-cache")
}

// kernelRecheck is how old a cached kernel may be before the harness asks
// apt whether Debian ships a newer one (apt-cache takes most of a second,
// too much for every package of every run).
const kernelRecheck = 24 * time.Hour

// initramfsStamp names what an initramfs was made from: busybox and the
// recipe. A cached one of another stamp is never used.
func initramfsStamp(busybox []byte) string {
	sum := sha256.Sum256(append(busybox, []byte(initramfsRecipe+initScript)...))
	return hex.EncodeToString(sum[:8])
}

// debianKernel returns the cached kernel and initramfs, making them first
// if they are missing or were made by another recipe or busybox, and again
// when, a day after they were made or last checked, apt names a newer
// kernel package than the cached one (keeping the cached one if the new
// one cannot be fetched). Test binaries of several packages run at once, so
// the work is done under a lock and published by rename.
func debianKernel() (vmKernel, error) {
	busybox, err := staticBusybox()
	if err != nil {
		return vmKernel{}, err
	}
	dir := cacheDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return vmKernel{}, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return vmKernel{}, err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return vmKernel{}, err
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)

	stamp := initramfsStamp(busybox)
	ready := filepath.Join(dir, "ready-"+stamp)
	var pkg string // the package to build from; "" asks apt
	cached, err := readReady(ready)
	if err == nil {
		st, serr := os.Stat(ready)
		if serr == nil && time.Since(st.ModTime()) < kernelRecheck {
			return cached, nil
		}
		var perr error
		if pkg, perr = kernelPackage(); perr != nil || pkg == "linux-image-"+cached.Version {
			now := time.Now()
			os.Chtimes(ready, now, now) // checked (or apt cannot say): not again for a day
			return cached, nil
		}
	}
	k, err := buildKernel(dir, stamp, busybox, pkg)
	if err != nil {
		if cached.Vmlinuz != "" { // a newer kernel, not fetched: the cached one still boots
			return cached, nil
		}
		return vmKernel{}, err
	}
	if err := os.WriteFile(ready+".tmp", []byte(k.Version+"\n"+k.Vmlinuz+"\n"+k.Initrd+"\n"), 0o644); err != nil {
		return vmKernel{}, err
	}
	return k, os.Rename(ready+".tmp", ready)
}

func readReady(path string) (vmKernel, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return vmKernel{}, err
	}
	f := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(f) != 3 {
		return vmKernel{}, errors.New("bad ready file")
	}
	k := vmKernel{Version: f[0], Vmlinuz: f[1], Initrd: f[2]}
	for _, p := range []string{k.Vmlinuz, k.Initrd} {
		if _, err := os.Stat(p); err != nil {
			return vmKernel{}, err
		}
	}
	return k, nil
}

// staticBusybox returns busybox-static's binary: the dynamically linked
// busybox of the plain package cannot run in an initramfs without libc.
func staticBusybox() ([]byte, error) {
	const path = "/bin/busybox"
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %v (apt-get install busybox-static)", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return nil, fmt.Errorf("%s is dynamically linked; the initramfs needs busybox-static (apt-get install busybox-static)", path)
		}
	}
	return os.ReadFile(path)
}

// buildKernel downloads the stock kernel package pkg, or the one apt names
// when pkg is "" (apt-get download: no install, no root needed), takes
// vmlinuz and the modules the guest needs, and writes the initramfs.
func buildKernel(dir, stamp string, busybox []byte, pkg string) (vmKernel, error) {
	if pkg == "" {
		var err error
		if pkg, err = kernelPackage(); err != nil {
			return vmKernel{}, err
		}
	}
	work, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return vmKernel{}, err
	}
	defer os.RemoveAll(work)
	if out, err := run(work, "apt-get", "download", "-q", pkg); err != nil {
		return vmKernel{}, fmt.Errorf("apt-get download %s: %v: %s (run apt-get update first?)", pkg, err, lastLines(out, 3))
	}
	debs, _ := filepath.Glob(filepath.Join(work, "*.deb"))
	if len(debs) != 1 {
		return vmKernel{}, fmt.Errorf("apt-get download %s left %d .deb files", pkg, len(debs))
	}
	tree := filepath.Join(work, "x")
	if out, err := run(work, "dpkg-deb", "-x", debs[0], tree); err != nil {
		return vmKernel{}, fmt.Errorf("dpkg-deb -x %s: %v: %s", debs[0], err, lastLines(out, 3))
	}
	vmlinuz, _ := filepath.Glob(filepath.Join(tree, "boot", "vmlinuz-*"))
	if len(vmlinuz) != 1 {
		return vmKernel{}, fmt.Errorf("%s holds %d kernels in /boot", pkg, len(vmlinuz))
	}
	version := strings.TrimPrefix(filepath.Base(vmlinuz[0]), "vmlinuz-")
	if cfg, err := os.ReadFile(filepath.Join(tree, "boot", "config-"+version)); err == nil && !bytes.Contains(cfg, []byte("\nCONFIG_XFS_QUOTA=y")) {
		return vmKernel{}, fmt.Errorf("%s is built without CONFIG_XFS_QUOTA", pkg)
	}
	kernelDir := filepath.Join(tree, "lib", "modules", version, "kernel")
	wanted := slices.Clone(guestModules)
	for _, m := range ext4Modules {
		if matches, _ := filepath.Glob(filepath.Join(kernelDir, "fs", "*", m+".ko")); len(matches) > 0 {
			wanted = append(wanted, m)
		}
	}
	mods, err := moduleClosure(kernelDir, wanted)
	if err != nil {
		return vmKernel{}, fmt.Errorf("%s: %w", pkg, err)
	}
	files := []initramfsFile{{path: "bin/busybox", mode: 0o755, data: busybox}}
	var order []string
	for _, m := range mods {
		data, err := os.ReadFile(m.path)
		if err != nil {
			return vmKernel{}, err
		}
		files = append(files, initramfsFile{path: "modules/" + m.name + ".ko", mode: 0o644, data: data})
		order = append(order, m.name)
	}
	files = append(files,
		initramfsFile{path: "modules/order", mode: 0o644, data: []byte(strings.Join(order, "\n") + "\n")},
		initramfsFile{path: "init", mode: 0o755, data: []byte(initScript)})

	out := filepath.Join(dir, version+"-"+stamp)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return vmKernel{}, err
	}
	k := vmKernel{Version: version, Vmlinuz: filepath.Join(out, "vmlinuz"), Initrd: filepath.Join(out, "initrd.gz")}
	if err := copyFile(vmlinuz[0], k.Vmlinuz); err != nil {
		return vmKernel{}, err
	}
	f, err := os.Create(k.Initrd)
	if err != nil {
		return vmKernel{}, err
	}
	err = writeInitramfs(f, []string{"bin", "proc", "sys", "mnt"}, files)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return k, err
}

// kernelPackage names the versioned package linux-image-amd64 depends on.
func kernelPackage() (string, error) {
	out, err := run("", "apt-cache", "depends", kernelMeta)
	if err != nil {
		return "", fmt.Errorf("apt-cache depends %s: %v: %s (run apt-get update first)", kernelMeta, err, lastLines(out, 3))
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if dep, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "Depends: "); ok && strings.HasPrefix(dep, "linux-image-") {
			return dep, nil
		}
	}
	return "", fmt.Errorf("apt-cache depends %s names no linux-image package (run apt-get update first)", kernelMeta)
}

type module struct{ name, path string }

// moduleClosure finds the wanted modules and everything they depend on
// (from each .ko's .modinfo "depends="), dependencies first: the order
// insmod needs. depmod would do the same but needs kmod.
func moduleClosure(kernelDir string, wanted []string) ([]module, error) {
	paths := map[string]string{}
	err := filepath.WalkDir(kernelDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".ko") {
			paths[modName(strings.TrimSuffix(d.Name(), ".ko"))] = p
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	var order []module
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(name string) error
	visit = func(name string) error {
		switch state[name] {
		case 1:
			return fmt.Errorf("module dependency cycle at %s", name)
		case 2:
			return nil
		}
		state[name] = 1
		p, ok := paths[name]
		if !ok {
			return fmt.Errorf("module %s not found (compressed modules are not supported)", name)
		}
		deps, err := moduleDepends(p)
		if err != nil {
			return err
		}
		for _, d := range deps {
			if err := visit(d); err != nil {
				return err
			}
		}
		state[name] = 2
		order = append(order, module{name, p})
		return nil
	}
	for _, w := range wanted {
		if err := visit(modName(w)); err != nil {
			return nil, err
		}
	}
	return order, nil
}

func modName(s string) string { return strings.ReplaceAll(s, "-", "_") }

func moduleDepends(path string) ([]string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := f.Section(".modinfo")
	if s == nil {
		return nil, fmt.Errorf("%s has no .modinfo", path)
	}
	data, err := s.Data()
	if err != nil {
		return nil, err
	}
	var deps []string
	for _, kv := range bytes.Split(data, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok && len(v) > 0 {
			for _, d := range strings.Split(string(v), ",") {
				deps = append(deps, modName(d))
			}
		}
	}
	sort.Strings(deps)
	return deps, nil
}

func run(dir, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// lastLines gives the last n non-empty lines of b, joined by " / ".
func lastLines(b []byte, n int) string {
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}

// initScript is the initramfs's /init: load the modules, mount the host's /
// over virtio-9p, move the kernel filesystems into it and run the program
// named on the kernel command line there (chrooted, so host paths are
// valid as they are), then power off. The program's status goes to a file
// on the host; the kernel's exit carries none.
const initScript = `#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules/order); do
	insmod /modules/$m.ko || echo "xfsq-init: insmod $m failed"
done
run=
for w in $(cat /proc/cmdline); do
	case "$w" in xfsq.run=*) run=${w#xfsq.run=} ;; esac
done
if mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose hostroot /mnt; then
	mount --move /proc /mnt/proc
	mount --move /sys /mnt/sys
	mount --move /dev /mnt/dev
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin chroot /mnt /bin/sh "$run" </mnt/dev/null >/mnt/dev/console 2>&1
else
	echo "xfsq-init: cannot mount the host's / over virtio-9p"
fi
sync
poweroff -f
`
