package sandbox_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox"
)

// TestPurgeWithMountsInsideIsHonestAttack: project rm --purge of p whose
// tenant's mounts reached the host inside its trees: a tmpfs on its
// workspace's uploads/, a file bind-mounted over one of its files, and a
// tmpfs on its cache tree's own directory. Nothing on the mounts is
// touched; each tree's result and storage.evicted record say partial
// (never done) for a tree of which anything stayed, name each mount point
// left, and count as freed only what went (never the mounts' files);
// project.removed's purged_trees say the same. Held (attack6): saferm
// leaves a mount root (statx STATX_ATTR_MOUNT_ROOT, mount ID) and every
// directory above it, and deletion.Delete settles partial when Left is
// not empty, with rep.AllBytes (inodes whose last link went).
func TestPurgeWithMountsInsideIsHonestAttack(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		r.Add(100<<20, "p")
		ws := filepath.Join(m.Root, "projects", "p")
		cache := filepath.Join(m.Root, "cache", "p")
		big := make([]byte, 64<<10)
		for _, f := range []string{"gone-1", "gone-2"} {
			if err := os.WriteFile(filepath.Join(ws, f), big, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(ws, "bound"), []byte("under the bind mount"), 0o644); err != nil {
			t.Fatal(err)
		}
		outside := filepath.Join(t.TempDir(), "tenant-file")
		if err := os.WriteFile(outside, big, 0o644); err != nil {
			t.Fatal(err)
		}
		mounttest.Tmpfs(t, filepath.Join(ws, "uploads"))
		mounttest.Tmpfs(t, cache)
		mounttest.Bind(t, outside, filepath.Join(ws, "bound"))
		for _, f := range []string{filepath.Join(ws, "uploads", "on-tmpfs"), filepath.Join(cache, "on-tmpfs")} {
			if err := os.WriteFile(f, big, 0o644); err != nil {
				t.Fatal(err)
			}
		}

		res, err := m.Remove(ctx, "p", sandbox.RemoveOptions{Purge: true, Force: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{filepath.Join(ws, "uploads", "on-tmpfs"), filepath.Join(cache, "on-tmpfs"), outside} {
			if st, err := os.Stat(f); err != nil || st.Size() != int64(len(big)) {
				t.Errorf("a file on a tenant's mount, %s, was touched: %v", f, err)
			}
		}
		want := map[string][]string{
			"projects/p": {"projects/p/bound", "projects/p/uploads"},
			"cache/p":    {"cache/p"},
		}
		check := func(what, path, state string, bytes uint64, left []string) {
			t.Helper()
			slices.Sort(left)
			w, ok := want[path]
			if !ok {
				if state != journal.StateDone {
					t.Errorf("%s %s: %s, left %v", what, path, state, left)
				}
				return
			}
			if state != journal.StatePartial || !slices.Equal(left, w) {
				t.Errorf("%s %s: %s, left %v; want partial, left %v", what, path, state, left, w)
			}
			if bytes > 2*uint64(len(big))+64<<10 {
				t.Errorf("%s %s: %d bytes freed, more than went (the mounts' files counted?)", what, path, bytes)
			}
			if path == "projects/p" && bytes < 2*uint64(len(big)) {
				t.Errorf("%s %s: %d bytes freed, less than the two files that went", what, path, bytes)
			}
		}
		for _, p := range res.PurgedTrees {
			var left []string
			for _, l := range p.Left {
				left = append(left, l.Path)
			}
			check("result", p.Path, p.State, p.FreedBytes, left)
		}
		for _, e := range r.Events(journal.TypeEvicted) {
			var ev journal.Evicted
			if err := json.Unmarshal(e.Payload, &ev); err != nil {
				t.Fatal(err)
			}
			if ev.State == journal.StatePending {
				continue
			}
			var left []string
			for _, l := range ev.Left {
				left = append(left, l.Path)
			}
			check("storage.evicted", ev.Path, ev.State, ev.Bytes, left)
		}
		removed := r.Events(journal.TypeProjectRemoved)
		if len(removed) != 1 {
			t.Fatalf("%d project.removed records", len(removed))
		}
		var pr journal.ProjectRemoved
		if err := json.Unmarshal(removed[0].Payload, &pr); err != nil {
			t.Fatal(err)
		}
		for _, p := range pr.PurgedTrees {
			var left []string
			for _, l := range p.Left {
				left = append(left, l.Path)
			}
			check("project.removed", p.Path, p.State, p.Bytes, left)
		}
		t.Logf("%+v", res.PurgedTrees)
	})
}
