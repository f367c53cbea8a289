package sandbox_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/nomount"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// leaveHalfway puts project name in state (adding or removing), held by
// no process (holder ""): what an add or a removal killed half-way
// leaves, for the next add, removal or doctor --fix to finish.
func leaveHalfway(t *testing.T, r *fixture.Root, name, state string) {
	t.Helper()
	ctx := r.Ctx
	if err := sandbox.TestStore(r.Manager).InTx(ctx, func(tx *store.Tx) error {
		return tx.SetProjectState(ctx, name, state, "")
	}); err != nil {
		t.Fatal(err)
	}
}

// TestFinishingInterruptedWorkNeverWaitsOnStalledFUSEAttack: an add or a
// removal of project p was killed half-way; p's tenant has mounted a FUSE
// filesystem whose server never answers on one of its trees or on a
// skeleton directory in its workspace. Rolling the add back (doctor --fix,
// project rm, or adding p again) and finishing the removal (doctor --fix,
// project rm --purge) each answer within 3 s, and the mount point is left
// in place. Also a limit change, leases and events of a ready project with
// a mount on its tree. Held (attack5): every look and removal is
// saferm's (openat2 RESOLVE_NO_XDEV; statx AT_STATX_DONT_SYNC first).
func TestFinishingInterruptedWorkNeverWaitsOnStalledFUSEAttack(t *testing.T) {
	for _, at := range []string{"projects/p", "projects/p/uploads", "cache/p"} {
		for _, state := range []string{store.StateAdding, store.StateRemoving} {
			t.Run(state+"-"+strings.ReplaceAll(at, "/", "-"), func(t *testing.T) {
				fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
					m, ctx := r.Manager, r.Ctx
					r.Add(100<<20, "p", "q")
					leaveHalfway(t, r, "p", state)
					run := mounttest.Probe(t)
					mounttest.StalledFUSE(t, filepath.Join(m.Root, at))
					run("doctor --fix", func() error { _, err := m.Doctor(ctx, true); return err })
					run("project rm --purge p", func() error {
						_, err := m.Remove(ctx, "p", sandbox.RemoveOptions{Purge: true, Force: true})
						return err
					})
					run("project add p", func() error { _, err := m.Add(ctx, "p", sandbox.AddOptions{}); return err })
					run("unowned", func() error { _, _, err := m.Unowned(ctx); return err })
					run("doctor", func() error { _, err := m.Doctor(ctx, false); return err })
					var st unix.Stat_t
					if err := nomount.Lstat(unix.AT_FDCWD, filepath.Join(m.Root, at), &st); err != nil {
						t.Errorf("the tenant's mount point %s went: %v", at, err)
					}
				})
			})
		}
	}
}

// TestReadyProjectOpsNeverWaitOnStalledFUSEAttack: a ready project whose
// tree (or a skeleton directory) its tenant mounted a never-answering FUSE
// filesystem on: a new limit, a lease taken and released, the events and
// admission each answer within 3 s. Held (attack5).
func TestReadyProjectOpsNeverWaitOnStalledFUSEAttack(t *testing.T) {
	for _, at := range []string{"projects/p", "projects/p/uploads", "cache/p", "scratch/p"} {
		t.Run(strings.ReplaceAll(at, "/", "-"), func(t *testing.T) {
			fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
				m, ctx := r.Manager, r.Ctx
				r.Add(100<<20, "p")
				run := mounttest.Probe(t)
				mounttest.StalledFUSE(t, filepath.Join(m.Root, at))
				for _, a := range []string{"", "cache", "scratch"} {
					run("set "+a, func() error {
						hard := uint64(50 << 20)
						_, err := m.Set(ctx, "p", a, sandbox.LimitChange{BytesHard: &hard})
						return err
					})
				}
				run("lease acquire", func() error { _, err := m.AcquireLease(ctx, "p", "run-1", time.Minute); return err })
				run("lease release", func() error { return m.ReleaseLease(ctx, "p", "run-1") })
				run("events", func() error { _, err := m.Events(ctx, sandbox.EventQuery{}); return err })
				run("check", func() error { _, err := m.Check(ctx, "p", sandbox.Read{Refresh: true}); return err })
				run("show", func() error { _, err := m.Show(ctx, "p", sandbox.Read{Refresh: true}); return err })
				run("top", func() error { _, err := m.Top(ctx, "p", "", inventory.Options{Depth: 3}); return err })
			})
		})
	}
}
