package snapshots

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
	"github.com/xfsq/xfsq/internal/testsupport/treetest"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/sandbox/internal/coretest"
	"github.com/xfsq/xfsq/store"
)

// A tenant that may mount can cover part of its tree, or all of it, with
// another filesystem. What it wrote beneath is still on the root's disk:
// every walk that sets the fallback's baseline (top, the snapshot pass, the
// refresh before a write) counts it, through a copy of the root's mount
// without its submounts, and never counts what the covering filesystem
// holds. Where that copy cannot be made (no CAP_SYS_ADMIN), the walk's
// figure is a floor and credits nothing until a walk sees the whole tree;
// a tree whose own directory is covered is not walked at all.
func TestWalksSeeBeneathATenantsMounts(t *testing.T) {
	walks := []struct {
		name string
		walk func(ctx context.Context, m *core.Manager, tr store.Tree) error
	}{
		{"top", func(ctx context.Context, m *core.Manager, tr store.Tree) error {
			_, err := New(m).Top(ctx, tr.Project, tr.Area, inventory.Options{Depth: 3})
			return err
		}},
		{"snapshot", func(ctx context.Context, m *core.Manager, tr store.Tree) error {
			snaps, err := New(m).Snapshot(ctx, core.SnapshotOptions{Projects: []string{tr.Project}, Area: tr.Area})
			if err == nil && len(snaps) == 1 && snaps[0].Error != "" {
				err = fmt.Errorf("%s", snaps[0].Error)
			}
			return err
		}},
		{"baseline refresh", func(ctx context.Context, m *core.Manager, tr store.Tree) error {
			return core.Rebaseline(ctx, m, tr)
		}},
	}
	const hidden, seen, covering = 600 << 10, 100 << 10, 2 << 20
	for _, w := range walks {
		for _, canClone := range []bool{true, false} {
			for _, whole := range []bool{false, true} {
				name := fmt.Sprintf("%s/clone=%v/whole tree covered=%v", w.name, canClone, whole)
				t.Run(name, func(t *testing.T) {
					ctx := context.Background()
					root := t.TempDir()
					m, st := coretest.Omni(t, root)
					if !canClone {
						core.CannotClone(t)
					}
					tr, err := m.Tree(ctx, "omni", area.Workspace)
					if err != nil {
						t.Fatal(err)
					}
					ws := filepath.Join(root, tr.Path)
					cover := filepath.Join(ws, "x")
					if whole {
						cover = ws
					}
					treetest.Write(t, filepath.Join(ws, "x", "hidden"), hidden)
					treetest.Write(t, filepath.Join(ws, "seen"), seen)
					mounttest.Tmpfs(t, cover)
					treetest.Write(t, filepath.Join(cover, "on-the-tmpfs"), covering)
					key := store.TreeKey{Project: tr.Project, Area: tr.Area}
					before, err := st.Baseline(ctx, key)
					if err != nil {
						t.Fatal(err)
					}
					werr := w.walk(ctx, m, tr)
					r, err := st.Read(ctx, key)
					if err != nil {
						t.Fatal(err)
					}
					last, err := st.Baseline(ctx, key)
					if err != nil {
						t.Fatal(err)
					}
					cutoff, err := m.RemovalCutoff(ctx, tr)
					if err != nil {
						t.Fatal(err)
					}
					switch {
					case canClone:
						if werr != nil {
							t.Fatalf("walk: %v", werr)
						}
						if r.Used.Bytes < hidden+seen || r.Used.Bytes >= covering {
							t.Errorf("usage %d bytes; want what the disk holds beneath the mount (at least %d), not the tmpfs's %d", r.Used.Bytes, hidden+seen, covering)
						}
						if last.Hidden || !cutoff.After(time.Unix(0, 1)) {
							t.Errorf("a walk that saw beneath every mount: hidden %v, cutoff %v; want credits by it", last.Hidden, cutoff)
						}
					case whole:
						if werr == nil || !strings.Contains(werr.Error(), saferm.ErrOtherMount.Error()) || !strings.Contains(werr.Error(), "CAP_SYS_ADMIN") {
							t.Errorf("walk of a covered tree without the copy: %v; want it refused as on another mount, saying what would let it walk", werr)
						}
						if last != before || r.Used.Bytes >= covering {
							t.Errorf("a refused walk changed the baseline: %+v before, %+v after, usage %d", before, last, r.Used.Bytes)
						}
					default:
						if werr != nil {
							t.Fatalf("walk: %v", werr)
						}
						if r.Used.Bytes < seen || r.Used.Bytes >= hidden {
							t.Errorf("usage %d bytes; want what the walk could see (%d)", r.Used.Bytes, seen)
						}
						if !last.Hidden || !cutoff.Equal(time.Unix(0, 1)) {
							t.Errorf("a walk that met a mount point it could not look beneath: hidden %v, cutoff %v; want nothing credited", last.Hidden, cutoff)
						}
						// The mount gone, the next walk sees it all and credits again.
						if err := unix.Unmount(cover, 0); err != nil {
							t.Fatal(err)
						}
						time.Sleep(2 * core.CtimeLag)
						if err := w.walk(ctx, m, tr); err != nil {
							t.Fatal(err)
						}
						if last, err := st.Baseline(ctx, key); err != nil || last.Hidden {
							t.Errorf("after a walk of the whole tree: %+v %v; want hidden cleared", last, err)
						}
						if r, err := st.Read(ctx, key); err != nil || r.Used.Bytes < hidden+seen {
							t.Errorf("after a walk of the whole tree: usage %d %v; want at least %d", r.Used.Bytes, err, hidden+seen)
						}
					}
				})
			}
		}
	}
}
