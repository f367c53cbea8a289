package files_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
	"github.com/xfsq/xfsq/sandbox"
)

// TestAWriteWhoseParentIsMountedOverMidBodyNeverWaits: on the fallback
// backend (a ledger, after a walk), a tenant starts an upload that
// replaces sub/t in its tree and, while the body streams, mounts a FUSE
// filesystem whose server never answers over sub, the target's parent
// directory (not the target: the round before covered that). The write
// holds sub open from before the mount, so placing it goes on beneath
// the mount; the replacement then asks the tree whether the directories
// down to sub changed since the walk. The write must end without waiting
// on the mount (a stalled write holds the tree's placing lock, so no
// later write to the tree lands); another project's write goes through.
//
// Held (attack3): the write opens the parent again when it places
// (openIn, files/resolve.go, with RESOLVE_NO_XDEV) and is refused there
// ("on another mount") before anything asks the server. Shown able to
// fail: with RESOLVE_NO_XDEV dropped from openIn the write waits, in
// saferm's parentsSettled (reached from place, files/put.go:418), which
// opens sub with openat(O_PATH) onto the mount's root and statx's its
// ctime without AT_STATX_DONT_SYNC (internal/saferm/saferm.go:611, 620):
// that wait is reachable from the sweep (see sweep's
// TestExecutorNeverWaitsOnAStalledFUSEAboveAnEntry), so this test keeps
// the refusal that spares the write from it.
func TestAWriteWhoseParentIsMountedOverMidBodyNeverWaits(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "a", "b")
	canary := plantCanary(t, s.root)
	sub := filepath.Join(s.root, "projects/a/sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "t"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The hourly pass's walk: the ledger now has a cutoff, so a
	// replacement asks whether the directories above it are settled.
	if _, err := s.m.Snapshot(ctx, sandbox.SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	putEndsDespiteAMount(t, s, "sub/t", "its target's parent", func() { mounttest.StalledFUSE(t, sub) })
	canary.check(t, "a write whose parent was mounted over")
}
