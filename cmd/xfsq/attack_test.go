package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
)

// TestFromThroughABindMountOfATreeIsRefused: a project's tree bind-mounted
// elsewhere on the host (for a container, a backup, a debug session) is
// still the tenant's: a --from through it is inside the sandbox root and
// must be refused as such. Climbing ".." from the mount leaves the tree at
// the mount point, so the check never meets the root, and the tenant's
// directory link in the mounted tree takes the copy to a host file.
func TestFromThroughABindMountOfATreeIsRefused(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "alpha")
	s.ok("project", "add", "omni")
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "canary"), []byte("CANARY-SECRET"), 0o600)
	alpha := filepath.Join(s.root, "projects/alpha")
	os.WriteFile(filepath.Join(alpha, "plain.txt"), []byte("tenant's own"), 0o644)
	os.Symlink(outside, filepath.Join(alpha, "sub")) // the tenant's directory link
	mnt := filepath.Join(t.TempDir(), "alpha-mounted")
	os.Mkdir(mnt, 0o755)
	mounttest.Bind(t, alpha, mnt)
	for _, from := range []string{filepath.Join(mnt, "sub/canary"), filepath.Join(mnt, "plain.txt")} {
		r := s.run("files", "put", "omni", "copy", "--from", from)
		if b, err := os.ReadFile(filepath.Join(s.root, "projects/omni/copy")); err == nil {
			t.Fatalf("files put --from %s (a tree bind-mounted outside the root) copied %q into omni; exit %d", from, b, r.code)
		}
		if r.code != 2 || !strings.Contains(r.stderr, "inside the sandbox root") {
			t.Errorf("files put --from %s: exit %d %q; want 2, refused as inside the sandbox root", from, r.code, r.stderr)
		}
	}
}
