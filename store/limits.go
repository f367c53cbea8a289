package store

import (
	"context"
	"fmt"

	"github.com/xfsq/xfsq/quota"
)

// SetTreeLimits replaces the recorded limits of a tree.
func (t *Tx) SetTreeLimits(ctx context.Context, project, area string, l quota.Limits) error {
	res, err := t.Exec(ctx, `UPDATE trees SET bytes_soft = ?, bytes_hard = ?, inodes_soft = ?, inodes_hard = ? WHERE host = ? AND project = ? AND area = ?`,
		int64(l.BytesSoft), int64(l.BytesHard), int64(l.InodesSoft), int64(l.InodesHard), t.s.Host, project, area)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("tree %s/%s: %w", project, area, ErrNotFound)
	}
	// A soft limit lowered below the usage starts its grace now.
	acct, err := t.account(ctx, TreeKey{Project: project, Area: area})
	if err != nil {
		return err
	}
	return t.startGrace(ctx, TreeKey{Project: project, Area: area}, acct)
}
