package xfs

import (
	"errors"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/internal/capdrop"
	"github.com/xfsq/xfsq/internal/testsupport/kerneltest"
	"github.com/xfsq/xfsq/quota"
)

// ext4 with prjquota is the ext4 backend, keyed by the superblock's UUID
// (as tune2fs reads it), and refuses a limit its quota file cannot hold,
// naming the maximum, where the kernel answers a bare ERANGE.
func testExt4Detected(t *testing.T, kfs *kerneltest.FS) {
	fs := open(t, kfs)
	if fs.Name() != "ext4" || fs.Kind() != KindExt4 {
		t.Fatalf("backend on ext4 with prjquota: %q, want ext4", fs.Name())
	}
	uuid, err := fs.UUID()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("tune2fs", "-l", kfs.Device).CombinedOutput()
	if err != nil {
		t.Fatalf("tune2fs -l: %v: %s", err, out)
	}
	if !strings.Contains(string(out), "Filesystem UUID:          "+uuid+"\n") {
		t.Errorf("UUID %s is not the one tune2fs -l reads:\n%s", uuid, out)
	}
	if fs.MaxLimits() != ext4V1Max {
		t.Errorf("maximum limits %+v, want the 64-bit quota format's %+v (mkfs.ext4 -O quota writes it)", fs.MaxLimits(), ext4V1Max)
	}
	dir := newTree(t, fs, "tree", 801, quota.Limits{})
	most := quota.Limits{BytesHard: ext4V1Max.BytesHard, InodesHard: ext4V1Max.InodesHard}
	if err := fs.SetLimits(801, most); err != nil {
		t.Fatalf("the largest limits ext4 holds: %v", err)
	}
	if q, err := fs.Get(801); err != nil || q.Limits != most {
		t.Errorf("read back %+v (%v), want %+v", q.Limits, err, most)
	}
	for _, l := range []quota.Limits{
		{BytesHard: ext4V1Max.BytesHard + 1024},
		{BytesSoft: ext4V1Max.BytesSoft + 1024},
		{InodesHard: ext4V1Max.InodesHard + 1},
	} {
		err := fs.SetLimits(801, l)
		var tooLarge *LimitTooLargeError
		if !errors.As(err, &tooLarge) || !strings.Contains(err.Error(), "above ext4's maximum") {
			t.Errorf("limits %+v: %v, want a refusal naming ext4's maximum", l, err)
		}
	}
	if id, inherit, err := fs.TreeID(dir); err != nil || id != 801 || !inherit {
		t.Errorf("tree carries %d (inherit %v, %v), want 801 with PROJINHERIT", id, inherit, err)
	}
}

// ext4 mounted without prjquota (its quota feature still accounting) is
// not enforced: the fallback, with the mount option as the fix.
func testExt4NoPrjquota(t *testing.T, kfs *kerneltest.FS) {
	kfs.Remount("")
	defer kfs.Remount("prjquota")
	_, err := Open(kfs.Dir)
	var unsupported *quota.UnsupportedError
	if !errors.As(err, &unsupported) || !strings.HasPrefix(unsupported.Short, "ext4:") || !strings.Contains(unsupported.Fix, "-o prjquota") {
		t.Fatalf("Open on ext4 without prjquota: %v, want an UnsupportedError naming ext4 and -o prjquota", err)
	}
}

// The trap the ext4 backend lives with: a writer holding CAP_SYS_RESOURCE
// passes a hard limit; the same write without it (the case's own thread,
// as a container's writer) is stopped — which is why xfsq drops it for its
// own writes (capdrop).
func testExt4Bypass(t *testing.T, kfs *kerneltest.FS) {
	fs := open(t, kfs)
	bound := newTree(t, fs, "bound", 901, quota.Limits{BytesHard: 10 * mib})
	root := newTree(t, fs, "root", 902, quota.Limits{BytesHard: 10 * mib})
	if _, err := kerneltest.Fill(filepath.Join(bound, "big"), 20*mib); !isQuotaErr(err) {
		t.Errorf("a writer without CAP_SYS_RESOURCE wrote 20 MiB into 10 MiB: %v", err)
	}
	type result struct {
		held    bool
		written int
		err     error
	}
	done := make(chan result)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		held, _ := capdrop.Held()
		n, err := kerneltest.Fill(filepath.Join(root, "big"), 20*mib)
		done <- result{held, n, err}
	}()
	r := <-done
	if !r.held {
		t.Fatal("the writer meant to hold CAP_SYS_RESOURCE does not")
	}
	if r.err != nil || r.written != 20*mib {
		t.Errorf("a writer holding CAP_SYS_RESOURCE: wrote %d bytes, %v; the kernel's generic quota code lets it past the limit "+
			"(if this kernel binds it now, BypassNote is out of date)", r.written, r.err)
	}
}
