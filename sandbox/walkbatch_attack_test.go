package sandbox_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/internal/testsupport/prereq"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// TestConcurrentPassBeneathTenantMounts: a snapshot pass walking several
// trees at once, each batch through one copy of the root's mount, against
// a tenant who mounts inside its tree before the pass (a bind of another
// project's tree, a bind of a directory outside the root, a tmpfs, a
// tmpfs over a whole tree) and
// during it (more of the same, in trees not yet walked, as each walk
// starts), and leaves a FIFO, symlink loops and a 20,000-entry directory
// in the way. Each tree's figure is what the same pass finds once every
// mount is gone (no tree counts another's bytes, the outside's or a
// mount's, and misses none of its own), no walk errs or is partial for it,
// and the canary outside the root and the other project's file are as
// they were.
func TestConcurrentPassBeneathTenantMounts(t *testing.T) {
	if os.Geteuid() != 0 {
		prereq.Missing(t, "the tenant's mounts need root (run the tests as root)")
		return
	}
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		names := []string{"a", "b", "c", "d", "e", "f"}
		r.Add(256<<20, names...)
		sandbox.WalkBatches(t, 2, time.Minute) // several batches, several copies of the mount
		ws := func(p string, rest ...string) string {
			return filepath.Join(append([]string{m.Root, "projects", p}, rest...)...)
		}
		outside := t.TempDir()
		canary := filepath.Join(outside, "canary")
		os.WriteFile(canary, make([]byte, 5<<20), 0o644)
		other := ws("b", "secret")
		os.WriteFile(other, make([]byte, 2<<20), 0o644)
		digest := func(p string) string {
			b, err := os.ReadFile(p)
			if err != nil {
				return err.Error()
			}
			return fmt.Sprintf("%x", sha256.Sum256(b))
		}
		canaryWas, otherWas := digest(canary), digest(other)
		for i, n := range names {
			os.WriteFile(ws(n, "own"), make([]byte, (i+1)<<20), 0o644)
		}
		// c: a directory of 20,000 entries, walked while the others are.
		wide := ws("c", "wide")
		os.Mkdir(wide, 0o755)
		for i := range 20000 {
			f, err := os.Create(filepath.Join(wide, fmt.Sprintf("f%05d", i)))
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		// a: a FIFO (never opened: a walk that opened it would hang) and
		// symlink loops.
		if err := unix.Mkfifo(ws("a", "fifo"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Symlink("loop2", ws("a", "loop1"))
		os.Symlink("loop1", ws("a", "loop2"))
		os.Symlink(".", ws("a", "self"))
		os.Symlink(outside, ws("a", "out"))

		var mounts []string
		var mu sync.Mutex
		mount := func(source, at, fstype string, flags uintptr) {
			os.MkdirAll(at, 0o755)
			if err := unix.Mount(source, at, fstype, flags, "size=8m"); err != nil {
				t.Errorf("mount %s on %s: %v", source, at, err)
				return
			}
			mu.Lock()
			mounts = append(mounts, at)
			mu.Unlock()
			if fstype == "tmpfs" {
				os.WriteFile(filepath.Join(at, "in-tmpfs"), make([]byte, 3<<20), 0o644)
			}
		}
		unmountAll := func() {
			mu.Lock()
			defer mu.Unlock()
			for i := len(mounts) - 1; i >= 0; i-- {
				if err := unix.Unmount(mounts[i], unix.MNT_DETACH); err != nil {
					t.Errorf("unmount %s: %v", mounts[i], err)
				}
			}
			mounts = nil
		}
		t.Cleanup(unmountAll)
		mount(ws("b"), ws("a", "bind-b"), "", unix.MS_BIND)
		mount(outside, ws("a", "bind-outside"), "", unix.MS_BIND)
		mount("tmpfs", ws("a", "tmp"), "tmpfs", 0)
		// A tmpfs over a whole tree's directory: walked beneath it, the
		// tree's own file is still found.
		mount("tmpfs", ws("e"), "tmpfs", 0)
		// During the pass: as each tree's walk starts, mounts in the trees
		// after it (another batch's, or one walking beside it).
		during := map[string]func(){
			"a": func() { mount(ws("a"), ws("e", "bind-a"), "", unix.MS_BIND) },
			"b": func() { mount("tmpfs", ws("f", "tmp"), "tmpfs", 0) },
			"c": func() { mount(outside, ws("d", "bind-outside"), "", unix.MS_BIND) },
		}
		var once sync.Map
		sandbox.OnSnapshotTree(t, func(_ context.Context, tree store.Tree) {
			if f := during[tree.Project]; f != nil && tree.Area == area.Workspace {
				if _, done := once.LoadOrStore(tree.Project, true); !done {
					f()
				}
			}
		})
		figures := func(when string) map[string]sandbox.TreeSnapshot {
			t.Helper()
			snaps, err := m.Snapshot(ctx, sandbox.SnapshotOptions{Area: area.Workspace})
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			out := map[string]sandbox.TreeSnapshot{}
			for _, s := range snaps {
				if s.Error != "" || s.Partial || s.Errors != 0 {
					t.Errorf("%s: %s/%s: error %q partial %v unreadable %d", when, s.Project, s.Area, s.Error, s.Partial, s.Errors)
				}
				out[s.Project] = s
			}
			return out
		}
		attacked := figures("with the tenant's mounts")
		unmountAll()
		sandbox.OnSnapshotTree(t, nil)
		truth := figures("once every mount is gone")
		for _, n := range names {
			got, want := attacked[n], truth[n]
			if got.SizeBytes != want.SizeBytes || got.Files != want.Files || got.Dirs != want.Dirs {
				t.Errorf("tree %s: %d bytes, %d files, %d dirs walked beside the mounts; %d, %d, %d without them",
					n, got.SizeBytes, got.Files, got.Dirs, want.SizeBytes, want.Files, want.Dirs)
			}
			if own := uint64(slices.Index(names, n)+1) << 20; want.SizeBytes < own || want.SizeBytes > own+(2<<20)+(1<<20) {
				t.Errorf("tree %s: %d bytes without mounts, its own file alone is %d", n, want.SizeBytes, own)
			}
		}
		if truth["c"].Files < 20000 {
			t.Errorf("tree c: %d files, want its 20,000", truth["c"].Files)
		}
		if digest(canary) != canaryWas || digest(other) != otherWas {
			t.Errorf("the canary outside the root or b's file changed")
		}
	})
}

// TestConcurrentPassOneTreeFailsAlone: in a pass walking trees at once,
// a tree whose directory became a symlink to outside the root, and one
// whose directory is gone, fail each on its own entry (nothing outside
// counted); the trees walked beside them, in the same batch, keep their
// figures and are stored.
func TestConcurrentPassOneTreeFailsAlone(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		names := []string{"a", "b", "c", "d"}
		r.Add(256<<20, names...)
		sandbox.WalkBatches(t, 4, time.Minute) // all four in one batch
		outside := t.TempDir()
		os.WriteFile(filepath.Join(outside, "canary"), make([]byte, 5<<20), 0o644)
		for i, n := range names {
			os.WriteFile(filepath.Join(m.Root, "projects", n, "own"), make([]byte, (i+1)<<20), 0o644)
		}
		ws := func(n string) string { return filepath.Join(m.Root, "projects", n) }
		os.RemoveAll(ws("b"))
		if err := os.Symlink(outside, ws("b")); err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(ws("c"))
		snaps, err := m.Snapshot(ctx, sandbox.SnapshotOptions{Area: area.Workspace})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]sandbox.TreeSnapshot{}
		for _, s := range snaps {
			got[s.Project] = s
		}
		if s := got["b"]; s.Error == "" || s.SizeBytes >= 5<<20 {
			t.Errorf("b (a symlink to outside the root): error %q, %d bytes; want an error and nothing counted", s.Error, s.SizeBytes)
		}
		for _, n := range []string{"a", "d"} {
			own := uint64(slices.Index(names, n)+1) << 20
			if s := got[n]; s.Error != "" || s.SizeBytes < own || s.SizeBytes > own+(1<<20) {
				t.Errorf("%s beside the failing trees: error %q, %d bytes; want its own %d", n, s.Error, s.SizeBytes, own)
			}
			rep, err := m.ProjectStorage(ctx, n, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, tr := range rep.Trees {
				if tr.Area == area.Workspace && tr.SnapshotAt == nil {
					t.Errorf("%s: its walk beside the failing trees was not stored", n)
				}
			}
		}
	})
}
