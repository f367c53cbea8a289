package store

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/xfsq/xfsq/quota"
)

// A write of one tenant beside another tenant's long ledger: every write
// of every tree takes the host's admission lock, so what a write reads
// under it must not grow with the rows another tree has written since its
// last walk (a tenant making many small writes between hourly walks grows
// its ledger by the million).
func BenchmarkReserveBesideALongLedger(b *testing.B) {
	for _, rows := range []int{0, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("ledger=%d", rows), func(b *testing.B) {
			s := open(b, filepath.Join(b.TempDir(), "xfsq.db"))
			if err := s.InTx(ctx, func(tx *Tx) error {
				for i, name := range []string{"busy", "quiet"} {
					if _, _, err := tx.InsertProject(ctx, name, "", time.Now()); err != nil {
						return err
					}
					if err := tx.InsertTree(ctx, Tree{Project: name, Area: "workspace", Path: "projects/" + name, Backend: "fallback", FSUUID: "u", ProjectID: quota.ProjectID(i + 1)}); err != nil {
						return err
					}
				}
				// The busy tree's rows, as its writes would have left them
				// (one statement: a million Commits would take minutes).
				if rows == 0 {
					return nil
				}
				_, err := tx.Exec(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
					INSERT INTO ledger (host, project, area, bytes, inodes, at) SELECT ?, 'busy', 'workspace', 4096, 1, i FROM n`, rows, s.Host)
				return err
			}); err != nil {
				b.Fatal(err)
			}
			k := TreeKey{Project: "quiet", Area: "workspace"}
			b.ResetTimer()
			for b.Loop() {
				id, _, err := s.Reserve(ctx, k, 4096, 1, "h", "", time.Hour, nil, admitAll)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Release(ctx, id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
