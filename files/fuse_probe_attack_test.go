package files_test

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/errkind"
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
	run := mounttest.Probe(t) // before the mounts, so its cleanup runs after theirs
	for _, d := range []string{"m", "f", "d/m2", "uploads/m3", "inbox/m4"} {
		mounttest.StalledFUSE(t, filepath.Join(ws, d))
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

// TestNoOperationWaitsOnAStalledFUSEMountedOnTheTreeItself: the tenant's
// container mounts a FUSE filesystem whose server never answers on its
// workspace's own directory, and the mount reaches the host (shared
// propagation). Every operation on the root answers within 3 s: those of
// the file layer refuse the tree, the walks go beneath the mount, doctor
// reports it (mounted-tree) and a purge leaves it in place. Found by this
// test: doctor looked at the tree with os.Lstat, and the purge's measure
// (the fallback's Backend.Get, inventory.Walk) opened it through the
// mount; both waited for good.
func TestNoOperationWaitsOnAStalledFUSEMountedOnTheTreeItself(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "a", "b")
	canary := plantCanary(t, s.root)
	run := mounttest.Probe(t)
	ws := filepath.Join(s.root, "projects/a")
	mounttest.StalledFUSE(t, ws)
	run("list", func() error {
		_, err := s.l.List(ctx, "a", "", "")
		if errkind.Of(err) != errkind.NotReady || !strings.Contains(errkind.HintOf(err), "umount") {
			t.Errorf("list of a tree mounted over: %v (%s), want not ready, with the unmount as the fix", err, errkind.Of(err))
		}
		return err
	})
	run("put", func() error { _, err := s.l.Put(ctx, "a", "", "y", strings.NewReader("x"), 1); return err })
	run("rm", func() error { _, err := s.l.Remove(ctx, "a", "", "x"); return err })
	run("top", func() error {
		_, err := s.l.Top(ctx, "a", "", "", inventory.Options{Depth: 2, TopK: 5}, nil)
		return err
	})
	run("snapshot pass", func() error { _, err := s.m.Snapshot(ctx, sandbox.SnapshotOptions{Scheduled: true}); return err })
	run("report", func() error { _, err := s.m.Report(ctx); return err })
	run("doctor --fix", func() error { _, err := s.m.Doctor(ctx, true); return err })
	run("sweep", func() error { _, err := s.m.Sweep(ctx, sandbox.SweepOptions{}); return err })
	run("project rm --dry-run --purge", func() error {
		r, err := s.m.Remove(ctx, "a", sandbox.RemoveOptions{Purge: true, Force: true, DryRun: true})
		if err == nil && !slices.Contains(r.Left, "projects/a") {
			t.Errorf("a dry run's purge: left %v, would purge %+v; want projects/a left in place", r.Left, r.WouldPurge)
		}
		return err
	})
	run("project rm --purge", func() error {
		_, err := s.m.Remove(ctx, "a", sandbox.RemoveOptions{Purge: true, Force: true})
		return err
	})
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err != nil || !strings.Contains(string(mi), " "+ws+" ") {
		t.Errorf("the tenant's mount on %s is gone after the purge (%v): a purge never enters nor removes a mount", ws, err)
	}
	canary.check(t, "the probe")
}
