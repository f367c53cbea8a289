package readmodel

import (
	"context"

	"golang.org/x/sys/unix"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/quota"
)

// Unowned is the space on the root's filesystem that no tree of xfsq's
// holds: where an operator's missing space went (report's and the
// overview's). Only the kernel backends know it without a walk: one
// enumeration of the kernel's counters (the one a report makes) and one
// statfs. UsedBytes is what df says is used; ProjectsBytes what xfsq's
// trees hold, as the kernel counts them; UnownedBytes the difference
// (files outside every tree, the filesystem's own metadata and log,
// .xfsq/ itself); OtherIDsBytes, of it, what the kernel charges to
// project 0 (no project) and to IDs that are no tree's of xfsq's (set by
// hand, or left by a tree removed behind xfsq's back). The wire's type
// (api/v1).
type Unowned = apiv1.Unowned

// Unowned reads the space no tree holds; ok is false on the fallback,
// whose figures are walks and would need one of the whole filesystem.
func (m *Model) Unowned(ctx context.Context) (u Unowned, ok bool, err error) {
	kernel := m.Kernel()
	if kernel == nil {
		return Unowned{}, false, nil
	}
	trees, err := m.Store.Trees(ctx, "")
	if err != nil {
		return Unowned{}, false, err
	}
	ours := make(map[quota.ProjectID]bool, len(trees))
	for _, t := range trees {
		ours[t.ProjectID] = true
	}
	var st unix.Statfs_t
	if err := unix.Statfs(m.Root, &st); err != nil {
		return Unowned{}, false, err
	}
	u.UsedBytes = (st.Blocks - st.Bfree) * uint64(st.Bsize)
	err = kernel.WithAll(func(all []quota.Quota) error {
		for _, q := range all {
			if ours[q.ID] {
				u.ProjectsBytes += q.Bytes
			} else {
				u.OtherIDsBytes += q.Bytes
			}
		}
		return nil
	})
	if err != nil {
		return Unowned{}, false, err
	}
	zero, err := kernel.Get(0) // the enumeration leaves ID 0 out
	if err != nil {
		return Unowned{}, false, err
	}
	u.OtherIDsBytes += zero.Bytes
	u.UnownedBytes = u.UsedBytes - min(u.ProjectsBytes, u.UsedBytes)
	return u, true, nil
}
