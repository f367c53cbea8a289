package store

import (
	"strconv"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/journal"
)

// What each scheduled pass found free is read from a row a pass, not by
// parsing the pass's record (which lists every tree); other records add
// none; and the records kept from before migration 21 are carried over.
func TestPassFree(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		old := openAtVersion(t, dsn, 20)
		for i, free := range []int64{700, 0, 800} {
			payload := `{"trees":[{"project":"omni","area":"workspace","size_bytes":1,"total_files":1}],"free_bytes":` + strconv.FormatInt(free, 10) + `,"failed":0}`
			if _, err := old.SQL.Exec(old.SQL.Rebind(`INSERT INTO events (at, type, host, project, actor, payload) VALUES (?, ?, 'host-a', '', 't', ?)`),
				int64(i+1)*1e6, string(journal.TypeSnapshot), payload); err != nil {
				t.Fatal(err)
			}
		}
		old.Close()
		s := open(t, dsn) // migrates to 21
		got, err := s.PassFree(ctx, time.Unix(0, 0))
		if err != nil || len(got) != 2 || got[0].FreeBytes != 700 || got[1].FreeBytes != 800 || !got[0].At.Equal(time.Unix(1, 0)) {
			t.Fatalf("the passes journalled before migration 21: %v %+v; want 700 and 800 (the one of free 0 left out)", err, got)
		}
		since := time.Now().Add(-time.Second)
		if err := s.InTx(ctx, func(tx *Tx) error {
			if err := tx.AppendEvent(ctx, "", "t", journal.Snapshot{Trees: []journal.SnapshotTree{}, FreeBytes: 4096}); err != nil {
				return err
			}
			return tx.AppendEvent(ctx, "omni", "t", journal.ProjectAdded{Backend: "fallback"})
		}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.PassFree(ctx, since); err != nil || len(got) != 1 || got[0].FreeBytes != 4096 {
			t.Errorf("a pass journalled now: %v %+v; want its 4096 bytes free alone", err, got)
		}
	})
}
