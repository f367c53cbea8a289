package eventlog

import (
	"context"
	"time"

	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/store/internal/base"
)

// PassFreeRetention is how long what each pass found free is kept: longer
// than any snapshot window, and still a few thousand rows a host.
const PassFreeRetention = 400 * 24 * time.Hour

// recordPassFree keeps what a scheduled pass found free beside its
// record, and drops what is older than PassFreeRetention.
func (t *Tx) recordPassFree(ctx context.Context, p journal.Payload) error {
	var free uint64
	switch s := p.(type) {
	case journal.Snapshot:
		free = s.FreeBytes
	case *journal.Snapshot:
		free = s.FreeBytes
	}
	if free == 0 {
		return nil // not a pass's record, or its free space was not read
	}
	now := time.Now()
	if _, err := t.Exec(ctx, `INSERT INTO pass_free (host, at, free_bytes) VALUES (?, ?, ?) ON CONFLICT (host, at) DO UPDATE SET free_bytes = excluded.free_bytes`,
		t.s.Host, base.ToMicros(now), int64(free)); err != nil {
		return err
	}
	_, err := t.Exec(ctx, `DELETE FROM pass_free WHERE host = ? AND at < ?`, t.s.Host, base.ToMicros(now.Add(-PassFreeRetention)))
	return err
}
