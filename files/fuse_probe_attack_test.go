package files_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/sandbox"
)

// TestNoOperationWaitsOnATenantsStalledFUSEMounts: a tenant mounts FUSE
// filesystems whose servers never answer at names of its workspace (a
// directory m, a file f, a directory d/m2 below a directory the operator
// removes, and inside uploads/ and inbox/), then the operator and the API
// run what they run on the tree: list, get and open of the names, top, a
// snapshot, rm of each name, rm -r of d, of uploads and of inbox/, a
// sweep, and project rm --purge. Each must answer within 3 s (refusing a
// mount point, leaving it in place), and nothing outside the root
// changes. Held (attack3). Shown able to fail by reverting each defence
// in turn (each op then waits, 3 s each):
//   - nomount.LookFlags without AT_STATX_DONT_SYNC: list, get, open;
//   - saferm's Dir.statx without its first DONT_SYNC look: every rm,
//     rm -r and project rm --purge;
//   - sweep/gather.go's two OtherMountAt checks replaced by false: sweep;
//   - saferm.Beneath made to fail (ErrCannotClone, as without
//     CAP_SYS_ADMIN) and inventory's statFlags without DONT_SYNC: top and
//     snapshot (with the clone failing alone, inventory's own looks hold).
func TestNoOperationWaitsOnATenantsStalledFUSEMounts(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "a", "b")
	canary := plantCanary(t, s.root)
	ws := filepath.Join(s.root, "projects/a")
	for _, d := range []string{"m", "d/m2", "uploads/m3", "inbox/m4"} {
		os.MkdirAll(filepath.Join(ws, d), 0o755)
	}
	os.WriteFile(filepath.Join(ws, "f"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(ws, "d/junk"), []byte("x"), 0o644)
	var ends []chan struct{}
	// Registered before the mounts, so run after their cleanups, which
	// let a stalled operation go: the store outlives every operation.
	t.Cleanup(func() {
		for _, e := range ends {
			select {
			case <-e:
			case <-time.After(10 * time.Second):
				t.Error("still waiting after the FUSE connections closed")
			}
		}
	})
	for _, d := range []string{"m", "f", "d/m2", "uploads/m3", "inbox/m4"} {
		mounttest.StalledFUSE(t, filepath.Join(ws, d))
	}
	run := func(name string, f func() error) {
		done, ended := make(chan error, 1), make(chan struct{})
		ends = append(ends, ended)
		go func() { defer close(ended); done <- f() }()
		select {
		case err := <-done:
			t.Logf("%s: %v", name, err)
		case <-time.After(3 * time.Second):
			t.Errorf("%s waited on a stalled FUSE server mounted in the tree", name)
		}
	}
	run("list top", func() error { _, err := s.l.List(ctx, "a", "", ""); return err })
	run("list d", func() error { _, err := s.l.List(ctx, "a", "", "d"); return err })
	run("list uploads", func() error { _, err := s.l.List(ctx, "a", "", "uploads"); return err })
	for _, p := range []string{"m", "f", "d/m2"} {
		run("get "+p, func() error { _, err := s.l.Get(ctx, "a", "", p, io.Discard); return err })
		run("open "+p, func() error {
			f, _, err := s.l.Open(ctx, "a", "", p)
			if f != nil {
				f.Close()
			}
			return err
		})
	}
	run("top", func() error {
		_, err := s.l.Top(ctx, "a", "", "", inventory.Options{Depth: 2, TopK: 5}, nil)
		return err
	})
	run("snapshot", func() error { _, err := s.m.Snapshot(ctx, sandbox.SnapshotOptions{}); return err })
	run("rm m", func() error {
		_, err := s.l.Remove(ctx, "a", "", "m", files.RemoveOptions{Recursive: true})
		return err
	})
	run("rm f", func() error { _, err := s.l.Remove(ctx, "a", "", "f"); return err })
	run("rm -r d", func() error {
		_, err := s.l.Remove(ctx, "a", "", "d", files.RemoveOptions{Recursive: true})
		return err
	})
	run("rm -r uploads", func() error {
		_, err := s.l.Remove(ctx, "a", "", "uploads", files.RemoveOptions{Recursive: true})
		return err
	})
	run("rm -r inbox/", func() error {
		_, err := s.l.Remove(ctx, "a", "", "inbox/", files.RemoveOptions{Recursive: true})
		return err
	})
	run("sweep", func() error { _, err := s.m.Sweep(ctx, sandbox.SweepOptions{}); return err })
	run("project rm --purge", func() error {
		_, err := s.m.Remove(ctx, "a", sandbox.RemoveOptions{Purge: true, Force: true})
		return err
	})
	canary.check(t, "the probe")
}
