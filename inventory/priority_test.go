package inventory

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/threadtest"
)

// fn runs at idle I/O class and nice 10, the walk's workers too, and the
// thread that asked for it (any other thread) keeps its priority.
func TestBackgroundIsPerThread(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	class, nice := threadtest.Priority(t)
	dir := t.TempDir()
	for i := range 64 {
		sub := filepath.Join(dir, string(rune('a'+i%26)), string(rune('a'+i/26)))
		os.MkdirAll(sub, 0o755)
		os.WriteFile(filepath.Join(sub, "f"), []byte("x"), 0o644)
	}
	var mu sync.Mutex
	var inside []int
	err := Background(func() {
		c, n := threadtest.Priority(t)
		inside = append(inside, c, n)
		if _, err := Walk(dir, Options{Background: true, Workers: 4, onWorker: func() {
			c, n := threadtest.Priority(t)
			mu.Lock()
			inside = append(inside, c, n)
			mu.Unlock()
		}}); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(inside) < 4 {
		t.Fatalf("no worker of the walk reported: %v", inside)
	}
	for i := 0; i < len(inside); i += 2 {
		if inside[i] != 3 || inside[i+1] != 10 {
			t.Errorf("a thread of the background pass: I/O class %d, nice %d; want idle (3), 10", inside[i], inside[i+1])
		}
	}
	if c, n := threadtest.Priority(t); c != class || n != nice {
		t.Errorf("after a background pass the caller's thread has I/O class %d, nice %d; want %d, %d as before", c, n, class, nice)
	}
	lowered := threadtest.Lingering(nice, 5*time.Second)
	if len(lowered) > 0 {
		t.Errorf("threads %v kept the background pass's priority after it ended", lowered)
	}
}
