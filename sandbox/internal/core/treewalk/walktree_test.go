package treewalk

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/store"
)

// TestAWalkOfWhatIsNoDirectoryIsRefusedAtOnce: the file layer checked
// that rel was a directory; then the tenant changed it. Both are saferm's
// refusals (ErrUnsafe), a symlink said as one. A file with a FUSE
// filesystem mounted on it whose server never answers is refused too,
// without waiting: the walk goes through a copy of the root's mount, where
// rel is the plain file beneath, and the look that tells why it failed
// must be taken there, not through the tenant's mount, which would wait
// for good (it did, as an os.Lstat of the path).
func TestAWalkOfWhatIsNoDirectoryIsRefusedAtOnce(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "projects/a")
	if err := os.MkdirAll(filepath.Join(ws, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("d", filepath.Join(ws, "l")); err != nil {
		t.Fatal(err)
	}
	mounttest.StalledFUSE(t, filepath.Join(ws, "f"))
	w := &Walker{Root: root}
	tree := store.Tree{Project: "a", Area: "workspace", Path: "projects/a"}
	for _, c := range []struct {
		rel, want string
		unsafe    bool
	}{
		{"l", "is a symlink", true},
		{"f", "not a directory", true},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := w.WalkIn(tree, c.rel, inventory.Options{Depth: 1, TopK: 1})
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, saferm.ErrUnsafe) != c.unsafe {
				t.Errorf("walk of %s: %v, want an error saying %q (unsafe: %v)", c.rel, err, c.want, c.unsafe)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("the walk of %s waited on the tenant's stalled FUSE mount", c.rel)
		}
	}
}
