package sweep

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
)

// TestExecutorNeverWaitsOnAStalledFUSEAboveAnEntry: on the fallback
// backend (a ledger, so Cutoff is set), the sweep re-checks an entry's
// parent and then asks the tree whether the directories above the entry
// changed since the last walk (ParentsSettled). In that window a tenant
// mounts a FUSE filesystem whose server never answers over a directory
// above the entry (projects/p/a, the entry projects/p/a/coverage). The
// test's Cutoff mounts it, as the tenant's timing would. The sweep must
// neither wait on the mount (its evictions run one after another, for
// every project of the root) nor remove anything through it.
//
// Found by a hostile-tenant round: saferm's parentsSettled opens each
// directory of the chain with openat(O_PATH), which crosses onto a mount's
// root without asking its server, and then read its ctime with a statx
// that did ask it (GETATTR), which never answered. The ctime is read as
// the kernel holds it now (AT_STATX_DONT_SYNC), and a mount in the chain
// is not settled.
func TestExecutorNeverWaitsOnAStalledFUSEAboveAnEntry(t *testing.T) {
	root := t.TempDir()
	canary := filepath.Join(t.TempDir(), "canary")
	if err := os.WriteFile(canary, []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	entry := "projects/p/a/coverage"
	oldFile(t, filepath.Join(root, entry, "junk"))
	old := time.Now().Add(-30 * 24 * time.Hour)
	for d := filepath.Join(root, entry); len(d) > len(root); d = filepath.Dir(d) {
		os.Chtimes(d, old, old)
	}
	mnt := filepath.Join(root, "projects/p/a")
	var journal []deletion.Record
	x := executor(t, root, &journal)
	mounted := false
	x.Cutoff = func(context.Context, Eviction) (time.Time, error) {
		if !mounted { // the tenant, between the re-check and the removal
			mounted = true
			mounttest.StalledFUSE(t, mnt)
		}
		return time.Now(), nil
	}
	done := make(chan Result, 1)
	ended := make(chan struct{})
	// Registered before the mount (made inside Run), so run after its
	// cleanup: by then the connection is closed and a run stalled on it
	// is let go; wait for it so nothing outlives the test.
	t.Cleanup(func() {
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Error("the sweep still waits after the FUSE connection closed")
		}
	})
	go func() {
		defer close(ended)
		done <- x.Run(context.Background(), Plan{Evict: []Eviction{{Project: "p", Area: area.Workspace, Path: entry, Policy: "test"}}})
	}()
	select {
	case res := <-done:
		t.Logf("evicted %+v skipped %+v", res.Evicted, res.Skipped)
	case <-time.After(3 * time.Second):
		t.Errorf("the sweep waited on the stalled FUSE server mounted at projects/p/a, above the entry")
	}
	if b, err := os.ReadFile(canary); err != nil || string(b) != "outside" {
		t.Errorf("the canary outside the root: %q, %v", b, err)
	}
}
