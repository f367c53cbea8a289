package eventlog

import (
	"context"

	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/store/internal/holders"
)

// TookOver journals that c took what (a sweep_lock or a pass) named name
// over from a holder that is gone.
func (t *Tx) TookOver(ctx context.Context, c holders.Claim, project, what, name, from, why string, l holders.HolderLease) error {
	ev := journal.HolderTakenOver{What: what, Name: name, From: from, By: c.Holder, Why: why}
	if l.Found && l.Expired {
		ev.ExpiredAt = l.ExpiresAt
	}
	return t.AppendEvent(ctx, project, c.Actor, ev)
}
