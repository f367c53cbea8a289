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

// TestSkeletonRepairAfterATreeIsMountedOverAttack: a tenant removes its
// workspace's uploads/; doctor --fix finds it missing (its look is
// beneath any mount) and, in the window between that look and the
// repair, the tenant's container mounts something on the workspace
// itself (shared propagation), which a look then would have reported as
// mounted-tree. The repair must refuse the tree, neither waiting on the
// mount nor making uploads/ in what is mounted. Found by a hostile-tenant
// round: it was os.Mkdir(<root>/projects/p/uploads) by path, which
// resolved through the mount:
//   - a FUSE server that never answers: the repair waited for good (LOOKUP);
//   - a bind mount of a directory outside the root: uploads/ was made out
//     there, outside the sandbox root.
//
// It opens the tree through saferm now (core.MakeDirsIn), as reassign does
// through the core's PlaceTree.
//
// The window is held open here by running Run's two halves (diagnose,
// then repair) with the mount made between them, as a tenant racing a
// doctor --fix in a loop gets.
func TestSkeletonRepairAfterATreeIsMountedOverAttack(t *testing.T) {
	for _, how := range []string{"stalled FUSE", "bind of a directory outside the root"} {
		t.Run(how, func(t *testing.T) {
			ctx := context.Background()
			root := t.TempDir()
			outside := t.TempDir()
			m, _ := coretest.Omni(t, root)
			if err := coretest.Add(ctx, m, "p", core.LimitChange{}); err != nil {
				t.Fatal(err)
			}
			ws := filepath.Join(root, "projects", "p")
			if err := os.Remove(filepath.Join(ws, "uploads")); err != nil {
				t.Fatal(err)
			}
			d := New(m, Projects{}, snapshots.New(m).Snapshot)
			findings, err := d.diagnose(ctx)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, f := range findings {
				found = found || f.Kind == MissingDirectory && f.Path == "projects/p/uploads" && f.fixFn != nil
			}
			if !found {
				t.Fatalf("doctor did not find uploads/ missing: %+v", findings)
			}
			done, ended := make(chan error, 1), make(chan struct{})
			// Registered before the mount, so it runs after the mount's
			// cleanup, which lets a stalled repair go.
			t.Cleanup(func() {
				select {
				case <-ended:
				case <-time.After(10 * time.Second):
					t.Error("the repair still waits after the FUSE connection closed")
				}
			})
			if how == "stalled FUSE" {
				mounttest.StalledFUSE(t, ws)
			} else {
				mounttest.Bind(t, outside, ws)
			}
			go func() { defer close(ended); done <- d.repair(ctx, findings) }()
			select {
			case err := <-done:
				for _, f := range findings {
					if f.fixFn != nil {
						t.Logf("repair of %s %s: fixed %v, %s", f.Kind, f.Path, f.Fixed, f.Error)
					}
				}
				if err != nil {
					t.Logf("repair: %v", err)
				}
			case <-time.After(3 * time.Second):
				t.Errorf("doctor --fix's repair of uploads/ waited on the stalled FUSE server the tenant mounted on %s after the check", ws)
			}
			if _, err := os.Lstat(filepath.Join(outside, "uploads")); err == nil {
				t.Errorf("doctor --fix made uploads/ in %s, outside the root, through the tenant's mount on %s", outside, ws)
			}
		})
	}
}
