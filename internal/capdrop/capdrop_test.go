package capdrop_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/capdrop"
	"github.com/xfsq/xfsq/internal/testsupport/kerneltest"
	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// The cases need a thread that holds CAP_SYS_RESOURCE: the test kernel's
// root does (this workplace's containers drop it), so they run there.
func TestKernelCapdrop(t *testing.T) {
	kerneltest.Run(t, []kerneltest.Case{
		{Name: "DroppedForTheWriteOnlyAndRestored", Run: func(t *testing.T, _ *kerneltest.FS) { testDroppedAndRestored(t) }},
		{Name: "NoThreadKeepsTheDroppedSet", Run: func(t *testing.T, _ *kerneltest.FS) { testNoThreadKeepsDropped(t) }},
	})
}

func requireHeld(t *testing.T) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if held, err := capdrop.Held(); err != nil || !held {
		prereq.Missing(t, "the test needs CAP_SYS_RESOURCE (run it as root)")
	}
}

// The capability is gone inside fn, on fn's own thread, and back after.
func testDroppedAndRestored(t *testing.T) {
	requireHeld(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var inside bool
	want := errors.New("fn's own error")
	err := capdrop.WithoutSysResource(func() error {
		var err error
		inside, err = capdrop.Held()
		if err != nil {
			t.Fatal(err)
		}
		return want
	})
	if !errors.Is(err, want) {
		t.Fatalf("WithoutSysResource returned %v, want fn's error", err)
	}
	if inside {
		t.Fatal("CAP_SYS_RESOURCE was still in the effective set inside fn: a write there bypasses ext4's limits")
	}
	if after, err := capdrop.Held(); err != nil || !after {
		t.Fatalf("CAP_SYS_RESOURCE not back on the thread after fn (held %v, %v)", after, err)
	}
}

// Threads are reused: after many concurrent drops, every thread of the
// process holds the capability again — none was handed back without it.
func testNoThreadKeepsDropped(t *testing.T) {
	requireHeld(t)
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			capdrop.WithoutSysResource(func() error {
				return os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), []byte("x"), 0o644)
			})
		}()
	}
	wg.Wait()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		status, err := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "status"))
		if err != nil {
			continue // the thread ended
		}
		for _, line := range strings.Split(string(status), "\n") {
			if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
				eff, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
				if err != nil {
					t.Fatal(err)
				}
				if eff&(1<<unix.CAP_SYS_RESOURCE) == 0 {
					t.Errorf("thread %s lacks CAP_SYS_RESOURCE after the writes (CapEff %s)", task.Name(), strings.TrimSpace(hex))
				}
			}
		}
	}
}
