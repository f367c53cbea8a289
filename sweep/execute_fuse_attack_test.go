package sweep

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
)

// TestExecutorNeverWaitsOnAStalledFUSEInAnEntry: between planning and
// deleting, a tenant mounts a FUSE filesystem whose server never answers
// at a name the sweep looks up to tell a git repository it must keep
// (.git or HEAD inside a workspace entry the plan evicts, or .git at the
// tree's top, which the git-tracked re-check looks at). The sweep must
// neither wait on the mount (its plan's evictions run one after another,
// for every project of the root: one tenant's stalled server would stop
// every later project's eviction, for good) nor remove it. The last case,
// a mount at a name nothing looks up, is the control: left in place as a
// mount point, without waiting.
//
// Found by a hostile-tenant round at two sites, saferm's isRepository
// and the executor's stillUntracked, which looked .git and HEAD up with
// fstatat; both look with nomount.Lstat now, and the git reader opens
// with nomount.Openat, which refuses the mount before its server is
// asked: a .git that is a mount point protects the workspace.
func TestExecutorNeverWaitsOnAStalledFUSEInAnEntry(t *testing.T) {
	cases := []struct {
		name string
		mnt  string // relative to the root
		file bool   // the mount's root is a file
	}{
		{"HEAD in the entry", "projects/p/coverage/HEAD", true},
		{".git in the entry", "projects/p/coverage/.git", false},
		{"HEAD deeper in the entry", "projects/p/coverage/sub/HEAD", true},
		{".git at the tree's top", "projects/p/.git", false},
		{"a directory deeper in the entry", "projects/p/coverage/sub/mnt", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			entry := "projects/p/coverage"
			oldFile(t, filepath.Join(root, entry, "junk"))
			oldFile(t, filepath.Join(root, entry, "sub/junk"))
			mnt := filepath.Join(root, c.mnt)
			if c.file {
				oldFile(t, mnt)
			} else {
				os.MkdirAll(mnt, 0o755)
			}
			old := time.Now().Add(-30 * 24 * time.Hour)
			for _, d := range []string{filepath.Dir(mnt), filepath.Join(root, entry, "sub")} {
				for ; len(d) > len(root); d = filepath.Dir(d) {
					os.Chtimes(d, old, old)
				}
			}
			mounttest.StalledFUSE(t, mnt)
			var journal []deletion.Record
			x := executor(t, root, &journal)
			done := make(chan Result, 1)
			ended := make(chan struct{})
			go func() {
				defer close(ended)
				done <- x.Run(context.Background(), Plan{Evict: []Eviction{{Project: "p", Area: area.Workspace, Path: entry, Policy: "test"}}})
			}()
			// Registered after the mount, so run before its cleanup: a run
			// stalled on it is let go only then.
			t.Cleanup(func() {
				select {
				case <-ended:
				default:
					t.Log("the sweep still waits on the stalled FUSE server; its cleanup lets it go")
				}
			})
			select {
			case res := <-done:
				t.Logf("evicted %+v skipped %+v", res.Evicted, res.Skipped)
			case <-time.After(3 * time.Second):
				t.Fatalf("the sweep waited on the stalled FUSE server mounted at %s", c.mnt)
			}
			// Looked at as the kernel holds it: a stat would ask the server.
			var sx unix.Statx_t
			if err := unix.Statx(unix.AT_FDCWD, mnt, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT|unix.AT_STATX_DONT_SYNC, unix.STATX_TYPE, &sx); err != nil {
				t.Errorf("the mount point %s: %v; want it left in place", c.mnt, err)
			}
		})
	}
}
