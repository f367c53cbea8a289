package health

import (
	"bytes"
	"context"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
)

// inboundPath is the report's entry for root's inbound/.
func inboundPath(t *testing.T, r Report, root string) DiskPath {
	t.Helper()
	if r.Disk == nil {
		t.Fatalf("no disk part: %+v", r)
	}
	for _, p := range r.Disk.Paths {
		if p.Path == filepath.Join(root, "inbound") {
			return p
		}
	}
	t.Fatalf("inbound/ not in the disk part: %+v", r.Disk.Paths)
	return DiskPath{}
}

// inboundOnceAnswered is inbound/'s entry in the first of up to ten
// answers, 100 ms apart, that has its figures, or in the last.
func inboundOnceAnswered(t *testing.T, ch *Checker, root string) (p DiskPath) {
	t.Helper()
	for range 10 {
		if p = inboundPath(t, ch.Collect(context.Background()), root); p.Error == "" {
			return p
		}
		time.Sleep(100 * time.Millisecond)
	}
	return p
}

// TestDiskFiguresComeBackOnceAStalledMountIsDetachedAttack: a tenant's
// FUSE mount whose server never answers lands on inbound/ (shared
// propagation); health names inbound/ as not answering with the fix
// "check it with findmnt … ", and the operator detaches it (umount -l, as
// xfsq's own fixes say). The FUSE server is hung, not dead: its
// connection stays open, so the statfs already waiting on the detached
// mount never returns. inbound/ is now the root's own directory again and
// a statfs of it answers at once; the next health answer must report its
// figures.
//
// Found by a hostile-tenant round: the single flight was keyed by the
// path alone, so every later Collect joined the call stuck in the
// detached mount and reported "no answer yet" for as long as the hung
// server kept its connection. It is keyed by the path and its mount ID
// (read with AT_STATX_DONT_SYNC, never asking the mount) now.
func TestDiskFiguresComeBackOnceAStalledMountIsDetachedAttack(t *testing.T) {
	root, ch := budgetChecker(t)
	inbound := filepath.Join(root, "inbound")
	mounttest.StalledFUSE(t, inbound)
	if p := inboundPath(t, ch.Collect(context.Background()), root); p.Error == "" {
		t.Fatalf("inbound/ under a stalled FUSE mount answered: %+v", p)
	}
	// The operator's umount -l; the hung server keeps its connection open
	// (closed only at the test's end).
	if err := unix.Unmount(inbound, unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	var direct unix.Statfs_t
	done := make(chan error, 1)
	go func() { done <- unix.Statfs(inbound, &direct) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("a fresh statfs of inbound/ after the detach does not answer either: the test's premise fails")
	}
	if p := inboundOnceAnswered(t, ch, root); p.Error != "" || p.TotalBytes == 0 {
		t.Errorf("inbound/ after its stalled mount was detached (a statfs of it now answers at once): %+v; "+
			"want its figures: every health answer joins the statfs stuck in the detached mount", p)
	}
}

// TestConcurrentCollectsShareOneStatfsAttack: many health answers and
// scrapes at once, with a stalled FUSE mount on inbound/: each answers
// within its budget, the root's figures are in each, no data race (run
// with -race), and one thread waits on the mount. Held (attack5).
func TestConcurrentCollectsShareOneStatfsAttack(t *testing.T) {
	_, ch := stalledInbound(t)
	var wg sync.WaitGroup
	reports := make([]Report, 16)
	for i := range reports {
		wg.Go(func() { reports[i] = ch.Collect(context.Background()) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("concurrent collects did not answer within 3 s")
	}
	for i, r := range reports {
		if r.Disk == nil || len(r.Disk.Paths) == 0 || r.Disk.Paths[0].TotalBytes == 0 {
			t.Errorf("collect %d lost the root's figures: %+v", i, r.Disk)
		}
	}
	if n := statfsWaiters(); n > 1 {
		t.Errorf("%d goroutines wait in statfs after %d concurrent collects, want 1", n, len(reports))
	}
}

// statfsWaiters counts the goroutines in unix.Statfs.
func statfsWaiters() int {
	var b bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&b, 2)
	n := 0
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "unix.Statfs(") {
			n++
		}
	}
	return n
}

// TestDiskFiguresComeBackOnceAStalledServerGoesAttack: the same, but the
// FUSE server goes (its connection closes, the waiting statfs returns
// ENOTCONN) and the mount with it: the next answer reports inbound's
// figures again, the ended call no longer joined. Held (attack5): the
// call leaves inflight once it returns.
func TestDiskFiguresComeBackOnceAStalledServerGoesAttack(t *testing.T) {
	root, ch := budgetChecker(t)
	t.Run("stalled", func(t *testing.T) {
		mounttest.StalledFUSE(t, filepath.Join(root, "inbound"))
		if p := inboundPath(t, ch.Collect(context.Background()), root); p.Error == "" {
			t.Fatalf("inbound/ under a stalled FUSE mount answered: %+v", p)
		}
	}) // the server's connection closes and the mount goes here
	if p := inboundOnceAnswered(t, ch, root); p.Error != "" || p.TotalBytes == 0 {
		t.Errorf("inbound/ once the stalled server and its mount are gone: %+v, want its figures", p)
	}
}
