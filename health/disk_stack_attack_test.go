package health

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
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

// TestDetachedStalledMountsAreNamedUntilTheirServersGoAttack: the tenant
// mounts a FUSE filesystem whose server never answers on inbound/, a
// health answer names it, the mount is detached (umount -l) — and the
// tenant does it again, maxWaiting times, its servers hung, not dead. A
// detach does not let a waiting statfs go, so those calls hold their
// threads until the servers end, and inbound/ is not asked again while
// maxWaiting of them wait: its error names the devices, and the fix says
// that only the servers' end (or an abort of their connections) lets them
// go. Once the servers hang up, inbound's figures come back; the root's
// are there throughout. Found by a hostile-tenant round: the fix said
// umount -l, which after maxWaiting rounds no longer brought them back.
func TestDetachedStalledMountsAreNamedUntilTheirServersGoAttack(t *testing.T) {
	root, ch := budgetChecker(t)
	inbound := filepath.Join(root, "inbound")
	var hangUps []func()
	for i := range maxWaiting {
		hangUps = append(hangUps, mounttest.StalledFUSE(t, inbound))
		if p := inboundPath(t, ch.Collect(context.Background()), root); p.Error == "" {
			t.Fatalf("round %d: inbound/ under a stalled FUSE mount answered: %+v", i, p)
		}
		if err := unix.Unmount(inbound, unix.MNT_DETACH); err != nil { // the detach
			t.Fatal(err)
		}
	}
	statfsAnswers(t, inbound)
	r := ch.Collect(context.Background())
	if p := inboundPath(t, r, root); !strings.Contains(p.Error, "already wait") || !strings.Contains(p.Error, "devices 0:") {
		t.Errorf("inbound/ with %d calls waiting in detached mounts: %q, want a refusal naming their devices", maxWaiting, p.Error)
	}
	if r.Disk.Paths[0].TotalBytes == 0 {
		t.Errorf("the root's figures went with inbound's: %+v", r.Disk.Paths[0])
	}
	for _, hangUp := range hangUps {
		hangUp()
	}
	if p := inboundOnceAnswered(t, ch, root); p.Error != "" || p.TotalBytes == 0 {
		t.Errorf("inbound/ once the hung servers hung up: %q, want its figures", p.Error)
	}
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
// call under its own mount, freed when it hangs that server up. Found by
// a hostile-tenant round; the path is now opened once (O_PATH) and the
// mount ID read from, and statfs asked of, that one descriptor.
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
		hangUp := mounttest.StalledFUSE(t, inbound) // the tenant's mount, landing in the gap
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
