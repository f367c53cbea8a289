package usage

import (
	"context"
	"fmt"
	"time"

	"github.com/xfsq/xfsq/store"
)

// GrowthAndActivity fills the snapshot-derived fields of report rows from
// one read of every tree's snapshots (store.SnapshotSummaries): a read per
// row was three statements a tree.
func (m *Reads) GrowthAndActivity(ctx context.Context, rows []TreeStatus) error {
	if len(rows) == 0 {
		return nil
	}
	project := rows[0].Project // one project's rows (a detail page) read only its trees
	for _, r := range rows {
		if r.Project != project {
			project = ""
			break
		}
	}
	sums, err := m.Store.SnapshotSummaries(ctx, project, 24*time.Hour, 7*24*time.Hour)
	if err != nil {
		return err
	}
	for i := range rows {
		r := &rows[i]
		sum, ok := sums[store.TreeKey{Project: r.Project, Area: r.Area}]
		if !ok {
			continue
		}
		snap := sum.Latest
		// Growth is between complete walks; a partial one saw part of the tree.
		if sum.HaveComplete {
			r.Growth24hBytes, r.Growth7dBytes = sum.Growth[0], sum.Growth[1]
		}
		// Every walk's newest mtime was seen: a partial walk may have missed
		// newer ones, so the older complete walk's counts too.
		activity := snap.Mtime
		if sum.HaveComplete && sum.Complete.Mtime.After(activity) {
			activity = sum.Complete.Mtime
		}
		if !activity.IsZero() {
			r.LastActivityAt = &activity
		}
		if WalkDisagrees(snap) {
			walk := snap.SizeBytes
			r.WalkBytes = &walk
			r.Escape = fmt.Sprintf("the walk at %s found %d bytes under the tree, the kernel counts %d for its project ID: "+
				"files may have left the quota (the doctor's repair re-tags them)", snap.At.Format(time.RFC3339), walk, snap.KernelBytes)
		}
	}
	return nil
}

// WalkDisagrees reports whether a snapshot's walk and the kernel's count for
// the tree's project ID, read right after it, differ by more than 1 % of the
// larger: the sign of a quota escape that report shows and doctor checks.
// A partial walk saw only part of the tree, and without a kernel count
// (the fallback) there is nothing to compare.
func WalkDisagrees(s store.Snapshot) bool {
	if s.KernelBytes < 0 || s.Partial {
		return false
	}
	walk, kernel := s.SizeBytes, uint64(s.KernelBytes)
	return (max(walk, kernel)-min(walk, kernel))*100 > max(walk, kernel)
}
