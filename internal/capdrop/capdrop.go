// Package capdrop runs a write without CAP_SYS_RESOURCE, so that the
// kernel's quota limits bind it as they bind a tenant. On ext4 (the
// kernel's generic quota code) a process holding that capability writes
// past a hard limit; XFS binds everyone, so dropping it there costs nothing.
//
// Capabilities are per thread: the capability leaves the effective set of
// the calling goroutine's OS thread only, for the duration of fn, and comes
// back before the thread can run anything else. It must never change any
// other thread, nor hand a thread back to the runtime without the
// capabilities it had.
package capdrop

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// sysResource is the capability's bit in the second word of the v3 sets.
const sysResource = unix.CAP_SYS_RESOURCE

// WithoutSysResource runs fn on the calling goroutine, locked to its
// thread, with CAP_SYS_RESOURCE out of that thread's effective set. A
// thread that does not hold it runs fn as it is. Threads the runtime
// makes meanwhile come from its unlocked template thread, so none inherits
// the dropped set; goroutines fn starts run elsewhere and keep the
// capability (they must not write into a tree).
//
// If the capability cannot be dropped fn does not run: a write that would
// bypass a limit is not made. If it cannot be put back, the thread stays
// locked to the goroutine and ends with it, so nothing else runs there
// without the capability.
func WithoutSysResource(fn func() error) error {
	runtime.LockOSThread()
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var held [2]unix.CapUserData
	if err := unix.Capget(&hdr, &held[0]); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("read this thread's capabilities (capget): %w", err)
	}
	word, bit := sysResource/32, uint32(1)<<(sysResource%32)
	if held[word].Effective&bit == 0 {
		runtime.UnlockOSThread()
		return fn()
	}
	dropped := held
	dropped[word].Effective &^= bit
	if err := unix.Capset(&hdr, &dropped[0]); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("drop CAP_SYS_RESOURCE for a write bound by quota (capset): %w; nothing was written", err)
	}
	restored := false
	defer func() {
		if restored {
			runtime.UnlockOSThread()
		}
	}()
	defer func() { restored = unix.Capset(&hdr, &held[0]) == nil }()
	return fn()
}

// Held reports whether the calling thread has CAP_SYS_RESOURCE in its
// effective set: what a test reads inside and after WithoutSysResource.
// The caller should hold its thread (runtime.LockOSThread) for the answer
// to be about the thread it goes on running on.
func Held() (bool, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false, err
	}
	return data[sysResource/32].Effective&(1<<(sysResource%32)) != 0, nil
}
