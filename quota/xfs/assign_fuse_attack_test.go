package xfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// TestAssignNeverWaitsOnAStalledFUSEInTheTree: a tenant mounts a FUSE
// filesystem whose server never answers at a directory (or a file) of its
// tree; then the tree's project ID is assigned again (doctor's fix of an
// escape or of a wrong project ID re-tags the whole tree, doctor.go:413
// and :325; adding a project that adopts an existing directory,
// sandbox/internal/core/trees.go:209). Assign walks every entry through
// assignEntry, which must leave a mount point without asking it anything.
// The walk is driven here at the entry (assignDir's first step, tagging
// the tree's top, needs a filesystem with project IDs; the kernel tests
// have one but no FUSE): assignEntry is what assignDir calls for each name
// getdents gives, a mount point included.
//
// Found by a hostile-tenant round: assignEntry opened the name and only
// then compared its st_dev with the filesystem's, and the open of a FUSE
// mount's root is asked of its server (OPEN/OPENDIR), which never
// answered, so a repair or an add held for good. It opens through
// nomount.Openat now, which refuses the mount point (EXDEV) first.
func TestAssignNeverWaitsOnAStalledFUSEInTheTree(t *testing.T) {
	for _, kind := range []string{"dir", "file"} {
		t.Run(kind, func(t *testing.T) {
			tree := t.TempDir()
			canary := filepath.Join(t.TempDir(), "canary")
			os.WriteFile(canary, []byte("outside"), 0o644)
			mnt := filepath.Join(tree, "mnt")
			if kind == "dir" {
				os.Mkdir(mnt, 0o755)
			} else {
				os.WriteFile(mnt, []byte("x"), 0o644)
			}
			var st unix.Stat_t
			if err := unix.Stat(tree, &st); err != nil {
				t.Fatal(err)
			}
			fs := &FS{dir: tree, dev: st.Dev}
			parent, err := os.Open(tree)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { parent.Close() })
			done, ended := make(chan error, 1), make(chan struct{})
			// Registered before the mount, so run after its cleanup,
			// which lets a stalled assignEntry go.
			t.Cleanup(func() { <-ended })
			mounttest.StalledFUSE(t, mnt)
			entries, err := os.ReadDir(tree) // getdents: the parent's filesystem answers
			if err != nil || len(entries) != 1 {
				close(ended)
				t.Fatalf("readdir of the tree: %v %v", entries, err)
			}
			go func() {
				defer close(ended)
				done <- fs.assignEntry(int(parent.Fd()), tree, entries[0], 1)
			}()
			select {
			case err := <-done:
				t.Logf("assign with a stalled FUSE %s mounted in the tree: %v", kind, err)
			case <-time.After(3 * time.Second):
				t.Errorf("assign waited on the stalled FUSE server mounted at a %s of the tree", kind)
			}
			if b, err := os.ReadFile(canary); err != nil || string(b) != "outside" {
				t.Errorf("the canary outside the tree: %q, %v", b, err)
			}
		})
	}
}

// TestATreeMountedOverIsRefusedNotWaitedOn: the tenant's container mounts
// a FUSE filesystem whose server never answers on the tree's own directory
// (its mount reached the host). Assigning the tree's project ID (doctor's
// repairs) and reading it (doctor's check) refuse the tree as mounted over
// at once; both opened it by path, through the mount, and waited for good.
func TestATreeMountedOverIsRefusedNotWaitedOn(t *testing.T) {
	root := t.TempDir()
	tree := filepath.Join(root, "projects", "a")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(root, &st); err != nil {
		t.Fatal(err)
	}
	fs := &FS{dir: root, dev: st.Dev}
	if _, err := readAttr(filepath.Dir(tree)); err != nil {
		prereq.Missing(t, "FS_IOC_FSGETXATTR on "+root+": "+err.Error()+" (the temporary directory's filesystem must answer it, as ext4 and XFS do)")
	}
	ended := make(chan struct{})
	t.Cleanup(func() { <-ended }) // before the mount: runs after its cleanup lets a waiter go
	mounttest.StalledFUSE(t, tree)
	done := make(chan error, 2)
	go func() {
		defer close(ended)
		done <- fs.Assign(tree, 1)
		_, _, err := fs.TreeID(tree)
		done <- err
	}()
	for _, op := range []string{"Assign", "TreeID"} {
		select {
		case err := <-done:
			if !errors.Is(err, errMounted) {
				t.Errorf("%s of a tree mounted over: %v, want a refusal naming the mount", op, err)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("%s waited on the stalled FUSE server mounted on the tree", op)
		}
	}
}
