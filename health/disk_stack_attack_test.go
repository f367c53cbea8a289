package health

import (
	"context"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
)

// statfsAnswers is whether a direct statfs of path answers within 3 s.
func statfsAnswers(t *testing.T, path string) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		var s unix.Statfs_t
		done <- unix.Statfs(path, &s)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * time.Second):
		t.Fatalf("a fresh statfs of %s does not answer: the test's premise fails", path)
	}
}

// TestDiskFiguresComeBackAfterMaxWaitingDetachedMountsAttack: the tenant
// mounts a FUSE filesystem whose server never answers on inbound/, a
// health answer names it, the operator detaches it (umount -l, the fix
// health gives) — and the tenant does it again, maxWaiting times, its
// servers hung, not dead. Each statfs left in a detached mount keeps its
// slot in inflight for good, so once maxWaiting of them are there,
// inbound/ — now the root's own directory again, whose statfs answers at
// once — is never asked again: its figures are gone until serve restarts
// or the tenant lets its servers die. The detach is no fix any more, and
// TestDiskFiguresComeBackOnceAStalledMountIsDetachedAttack's point is
// lost after four rounds.
func TestDiskFiguresComeBackAfterMaxWaitingDetachedMountsAttack(t *testing.T) {
	root, ch := budgetChecker(t)
	inbound := filepath.Join(root, "inbound")
	for i := range maxWaiting {
		mounttest.StalledFUSE(t, inbound)
		if p := inboundPath(t, ch.Collect(context.Background()), root); p.Error == "" {
			t.Fatalf("round %d: inbound/ under a stalled FUSE mount answered: %+v", i, p)
		}
		if err := unix.Unmount(inbound, unix.MNT_DETACH); err != nil { // the operator's umount -l
			t.Fatal(err)
		}
	}
	statfsAnswers(t, inbound)
	var p DiskPath
	for range 5 {
		if p = inboundPath(t, ch.Collect(context.Background()), root); p.Error == "" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if p.Error != "" || p.TotalBytes == 0 {
		t.Errorf("inbound/ after %d stalled mounts there were each detached (a statfs of it answers at once): %q; "+
			"want its figures: the calls stuck in detached mounts still count against the path", maxWaiting, p.Error)
	}
}

// stalledMount mounts a FUSE filesystem whose server never answers on
// dst and returns the server's hang-up (closing its connection, which
// lets every waiter go with ENOTCONN). It is also hung up when t ends.
func stalledMount(t *testing.T, dst string) (hangUp func()) {
	t.Helper()
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skip("no /dev/fuse: ", err)
	}
	opts := "fd=" + strconv.Itoa(fd) + ",rootmode=40000,user_id=0,group_id=0,allow_other"
	if err := unix.Mount("stalled", dst, "fuse", 0, opts); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	closed := false
	hangUp = func() {
		if !closed {
			closed = true
			unix.Close(fd)
		}
	}
	t.Cleanup(func() { hangUp(); unix.Unmount(dst, unix.MNT_DETACH) })
	return hangUp
}

// TestStatfsKeyIsTheMountAskedAttack: statfs reads the mount ID of path
// with statx, then asks statfs(path) in another goroutine: two lookups of
// the path. A tenant whose mount lands on inbound/ between them gets the
// statfs stuck in its hung server filed under the mount that was there
// before — the root's own filesystem. Once its mount is detached (the
// operator's umount -l, or the tenant's own), inbound/ is the root's
// directory again, statx reads that same mount ID, and every health
// answer joins the call stuck in the detached mount: "no answer yet" for
// as long as the tenant keeps its server hung, the bug
// TestDiskFiguresComeBackOnceAStalledMountIsDetachedAttack was about,
// back through the gap. The tenant retries at no cost: a miss leaves a
// call under its own mount, freed when it hangs that server up.
//
// GOMAXPROCS(1) stands for a busy serve: the goroutine that asks statfs
// starts a little after statfs returns.
func TestStatfsKeyIsTheMountAskedAttack(t *testing.T) {
	root := makeRoot(t)
	inbound := filepath.Join(root, "inbound")
	d := &diskCollector{root: root}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	deadline := time.Now().Add(2 * time.Second)
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		c := d.statfs(inbound)
		hangUp := stalledMount(t, inbound) // the tenant's mount, landing in the gap
		stuck := false
		select {
		case <-c.done:
		case <-time.After(50 * time.Millisecond):
			stuck = true
		}
		if err := unix.Unmount(inbound, unix.MNT_DETACH); err != nil {
			t.Fatal(err)
		}
		if stuck {
			statfsAnswers(t, inbound)
			if again := d.statfs(inbound); again == c {
				t.Errorf("attempt %d: with the tenant's mount detached, inbound/'s statfs joins the call stuck in it "+
					"(filed under the mount ID statx read before the mount landed): its figures stay 'no answer yet' "+
					"as long as the tenant's server hangs", attempt)
				hangUp()
				return
			}
		}
		hangUp()
		select {
		case <-c.done:
		case <-time.After(3 * time.Second):
			t.Fatal("a statfs stuck in a hung-up server did not end")
		}
	}
	t.Log("the gap was not hit")
}
