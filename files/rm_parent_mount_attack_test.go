package files_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
	"github.com/xfsq/xfsq/sandbox"
)

// TestARemovalWhoseParentIsMountedOverAfterItsCheckNeverWaits: on the
// fallback backend (a ledger, after a walk), a tenant's file d/x is
// removed through the API; after the removal checked d/x and before it
// removes, the tenant mounts a FUSE filesystem whose server never
// answers over d (RaceHook at rm:checked stands for the tenant's
// timing). The removal must end without waiting on the mount and remove
// nothing through it.
//
// Held (attack3): the removal opens d again through saferm's
// openBeneath (RESOLVE_NO_XDEV) and is refused there without asking the
// server; the entry is left in place. Shown able to fail: with
// RESOLVE_NO_XDEV dropped from openBeneath (internal/saferm/saferm.go)
// the removal waits on the server. Note that saferm's parentsSettled
// (saferm.go:611, 620) would wait too were it reached first: the sweep
// reaches it (sweep's TestExecutorNeverWaitsOnAStalledFUSEAboveAnEntry).
func TestARemovalWhoseParentIsMountedOverAfterItsCheckNeverWaits(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "a", "b")
	canary := plantCanary(t, s.root)
	d := filepath.Join(s.root, "projects/a/d")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.m.Snapshot(ctx, sandbox.SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	mountNow, mounted := make(chan struct{}), make(chan struct{})
	*files.RaceHook = func(point string) {
		if point == "rm:checked" {
			close(mountNow)
			<-mounted
		}
	}
	t.Cleanup(func() { *files.RaceHook = nil })
	got, ended := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(ended)
		_, err := s.l.Remove(ctx, "a", "", "d/x")
		got <- err
	}()
	// Registered before the mount, so run after its cleanup, which ends
	// a removal stalled on it: the store outlives the removal.
	t.Cleanup(func() { <-ended })
	<-mountNow
	mounttest.StalledFUSE(t, d)
	close(mounted)
	select {
	case err := <-got:
		t.Logf("rm d/x with d mounted over after the check: %v", err)
	case <-time.After(3 * time.Second):
		t.Errorf("rm waited on the stalled FUSE server mounted over the parent of what it removes")
	}
	canary.check(t, "a removal whose parent was mounted over")
}
