package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
	"github.com/xfsq/xfsq/sandbox"
)

// TestAddingAProjectWhoseTreesATenantMountedOverNeverWaits: a tenant made
// projects/c, cache/c and scratch/c before the operator adds project c
// (an add adopts what is there) and mounted a FUSE filesystem whose
// server never answers on one of them (a container's mount reaching the
// host through shared propagation). The add is refused within 3 s, naming
// the mount, and a limit change of another project meanwhile answers too.
// Found by a hostile-tenant round: planTrees looked with os.Lstat, through
// the mount, inside the add's store transaction (RecordProject, after
// LockAdd), so the add waited for good and, holding the store's write
// lock (SQLite) or the add lock (PostgreSQL), stalled the host's other
// writes with it. It looks through saferm now.
func TestAddingAProjectWhoseTreesATenantMountedOverNeverWaits(t *testing.T) {
	for _, at := range []string{"projects/c", "cache/c", "scratch/c"} {
		t.Run(strings.ReplaceAll(at, "/", "-"), func(t *testing.T) {
			fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
				m, ctx := r.Manager, r.Ctx
				r.Add(100<<20, "b")
				for _, d := range []string{"projects/c", "cache/c", "scratch/c"} {
					os.MkdirAll(filepath.Join(m.Root, d), 0o755)
				}
				run := mounttest.Probe(t)
				mounttest.StalledFUSE(t, filepath.Join(m.Root, at))
				run("project add c", func() error {
					_, err := m.Add(ctx, "c", sandbox.AddOptions{})
					if err == nil || !strings.Contains(err.Error(), "another filesystem is mounted on it") {
						t.Errorf("add over a mounted %s: %v, want a refusal naming the mount", at, err)
					}
					return err
				})
				run("another project's limit change meanwhile", func() error {
					soft := uint64(1 << 20)
					_, err := m.Set(ctx, "b", "", sandbox.LimitChange{BytesSoft: &soft})
					return err
				})
			})
		})
	}
}

// TestNoPassOrReadWaitsOnStalledFUSEMounts: with tenants' FUSE mounts
// whose servers never answer on trees' own directories (cache/a, scratch/a,
// inbound/, and projects/gone, the tree of a project removed without
// purge that its tenant still mounts on), and inside trees (projects/a/m,
// cache/b/m, scratch/b/m, inbound/m, projects/gone/m), every scheduled pass
// (RunPass of each of retention.Passes) and every read that may walk
// (Overview with refresh, Warm, Unowned, Usage, ProjectStorage, Diff,
// ExportXFS, WriteXFSProjectFiles, RefreshShared, ReportOf with check)
// answers within 3 s.
func TestNoPassOrReadWaitsOnStalledFUSEMounts(t *testing.T) {
	for _, where := range []string{"on the trees", "in the trees"} {
		t.Run(where, func(t *testing.T) {
			fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
				m, ctx := r.Manager, r.Ctx
				r.Add(100<<20, "a", "b", "gone")
				for _, k := range []string{"snapshot_interval", "sweep_interval"} {
					if _, _, err := m.SetSetting(ctx, k, "1h"); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := m.Snapshot(ctx, sandbox.SnapshotOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := m.Remove(ctx, "gone", sandbox.RemoveOptions{Force: true}); err != nil {
					t.Fatal(err)
				}
				at := []string{"cache/a", "scratch/a", "inbound", "projects/gone"}
				if where == "in the trees" {
					at = []string{"projects/a/m", "cache/b/m", "scratch/b/m", "inbound/m", "projects/gone/m"}
				}
				run := mounttest.Probe(t)
				for _, d := range at {
					os.MkdirAll(filepath.Join(m.Root, d), 0o755)
					mounttest.StalledFUSE(t, filepath.Join(m.Root, d))
				}
				for _, pass := range []string{"snapshot", "sweep"} {
					run("pass "+pass, func() error { _, err := m.RunPass(ctx, pass); return err })
				}
				run("overview --refresh", func() error {
					_, err := m.Overview(ctx, sandbox.OverviewOptions{Refresh: true})
					return err
				})
				run("warm", func() error { _, err := m.Warm(ctx); return err })
				run("unowned", func() error { _, _, err := m.Unowned(ctx); return err })
				run("usage", func() error { _, err := m.Usage(ctx); return err })
				for _, p := range []string{"a", "b"} {
					run("project storage "+p, func() error { _, err := m.ProjectStorage(ctx, p, 3); return err })
					run("refresh "+p, func() error { return m.RefreshShared(ctx, p) })
					for _, a := range []string{"", "cache", "scratch"} {
						run("diff "+p+" "+a, func() error { _, err := m.Diff(ctx, p, sandbox.DiffOptions{Area: a}); return err })
					}
				}
				run("export xfs", func() error { _, err := m.ExportXFS(ctx); return err })
				run("write xfs project files", func() error {
					dir := t.TempDir()
					_, err := m.WriteXFSProjectFiles(ctx, filepath.Join(dir, "projects"), filepath.Join(dir, "projid"))
					return err
				})
				run("report --check --refresh", func() error {
					_, err := m.ReportOf(ctx, sandbox.ReportOptions{Check: true, Read: sandbox.Read{Refresh: true}})
					return err
				})
				run("doctor --fix", func() error { _, err := m.Doctor(ctx, true); return err })
				run("settle", func() error { _, err := m.SettleInterrupted(ctx); return err })
			})
		})
	}
}

// TestOpeningTheRootNeverWaitsOnStalledFUSEMounts: serve (and every
// shell) opens the root as it starts, and serve settles, warms its
// overview and answers /readyz; tenants' FUSE mounts whose servers never
// answer on their trees' directories and on inbound/ must not keep it from
// coming up. Held (attack4).
func TestOpeningTheRootNeverWaitsOnStalledFUSEMounts(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(100<<20, "a", "b")
		root := r.Manager.Root
		run := mounttest.Probe(t)
		for _, d := range []string{"projects/a", "cache/a", "scratch/a", "inbound", "projects/b/uploads"} {
			mounttest.StalledFUSE(t, filepath.Join(root, d))
		}
		run("open the root, settle, warm, ready", func() error {
			o, err := sandbox.OpenRoot(r.Ctx, sandbox.Config{Root: root, DSN: r.DSN, Host: fixture.Host, ProjectFiles: []string{}})
			if err != nil {
				return err
			}
			defer o.Close()
			if _, err := o.Manager.SettleInterrupted(r.Ctx); err != nil {
				return err
			}
			if _, err := o.Manager.Warm(r.Ctx); err != nil {
				return err
			}
			return o.Manager.Ready(r.Ctx, time.Second)
		})
	})
}
