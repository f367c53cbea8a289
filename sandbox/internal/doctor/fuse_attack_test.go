package doctor

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/sandbox/internal/coretest"
	"github.com/xfsq/xfsq/sandbox/internal/snapshots"
)

// TestDoctorNeverWaitsOnAStalledFUSEAtUploads: a tenant mounts a FUSE
// filesystem whose server never answers over its workspace's uploads/ (a
// name inside its own tree), or over the workspace itself (a container's
// mount that reached the host). Doctor, which the operator runs over every
// project of the root, must not wait on it: one tenant's stalled server
// would stop the diagnosis (and every repair) of every project, for good.
//
// Found by a hostile-tenant round: checkSkeleton looked at <tree>/uploads
// with os.Lstat, and a FUSE mount root's attributes were asked of its
// server (GETATTR), which never answered. It looks through nomount.Lstat
// now: a mount root, another device, reads as the directory the kernel
// holds, which doctor may report but never waits on. The tree's own
// directory was looked at with os.Lstat until the same test found it
// waiting there too; a covered tree is reported as mounted-tree.
func TestDoctorNeverWaitsOnAStalledFUSEAtUploads(t *testing.T) {
	for _, sub := range []string{"uploads", "inbox", ""} {
		t.Run("at "+filepath.Join("p", sub), func(t *testing.T) {
			ctx := context.Background()
			root := t.TempDir()
			canary := filepath.Join(t.TempDir(), "canary")
			if err := os.WriteFile(canary, []byte("outside"), 0o644); err != nil {
				t.Fatal(err)
			}
			m, _ := coretest.Omni(t, root)
			if err := coretest.Add(ctx, m, "p", core.LimitChange{}); err != nil {
				t.Fatal(err)
			}
			mnt := filepath.Join(root, "projects", "p", sub)
			if fi, err := os.Lstat(mnt); err != nil || !fi.IsDir() {
				t.Fatalf("%s: %v; the workspace skeleton should have made it", mnt, err)
			}
			mounttest.StalledFUSE(t, mnt)
			done := make(chan error, 1)
			ended := make(chan struct{})
			go func() {
				defer close(ended)
				findings, err := New(m, Projects{}, snapshots.New(m).Snapshot).Run(ctx, false)
				covered := false
				for _, f := range findings {
					t.Logf("finding %s %s: %s", f.Kind, f.Path, f.Detail)
					covered = covered || f.Kind == MountedTree && f.Path == "projects/p"
				}
				if err == nil && covered != (sub == "") {
					t.Errorf("a mounted-tree finding for projects/p: %v, want it only where the tree itself is covered", covered)
				}
				done <- err
			}()
			// Registered after the mount, so run before its cleanup: a
			// doctor stalled on it is let go only then.
			t.Cleanup(func() {
				select {
				case <-ended:
				default:
					t.Log("doctor still waits on the stalled FUSE server; its cleanup lets it go")
				}
			})
			select {
			case err := <-done:
				if err != nil {
					t.Logf("doctor: %v", err)
				}
			case <-time.After(3 * time.Second):
				t.Errorf("doctor waited on the stalled FUSE server mounted at %s", mnt)
			}
			if b, err := os.ReadFile(canary); err != nil || string(b) != "outside" {
				t.Errorf("the canary outside the root: %q, %v", b, err)
			}
		})
	}
}
