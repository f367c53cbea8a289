package metrics_test

import (
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/metrics"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// xfsq_tree_full_in_seconds is the trend of a tree's snapshots: a tree
// filling 1 MiB an hour with 10 MiB left is full in about 10 h; a tree
// not filling has no series. The fit is made beside the scrapes, which
// never wait for it.
func TestTreeFullInSeconds(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		r.Add(30<<20, "filling", "flat")
		now := time.Now()
		for h := 20; h >= 0; h-- {
			err := sandbox.TestStore(m).InTx(ctx, func(tx *store.Tx) error {
				return tx.AddSnapshot(ctx, store.Snapshot{Project: "filling", Area: area.Workspace, At: now.Add(-time.Duration(h) * time.Hour),
					SizeBytes: uint64(20-h) << 20, KernelBytes: -1}, []byte{}, 35*24*time.Hour)
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		// The ledger puts the usage now on the line: 20 MiB of 30.
		ledgerTo(t, r, "filling", 20<<20)
		url := serve(t, r, nil)
		deadline := time.Now().Add(15 * time.Second)
		for {
			samples := parse(t, get(t, url))
			got := find(samples, metrics.TreeFullInSeconds, nil)
			if len(got) == 1 && got[0].labels["project"] == "filling" && got[0].labels["area"] == area.Workspace {
				if v := got[0].value; v < 9*3600 || v > 11*3600 {
					t.Errorf("filling full in %v s, want about 10 h", v)
				}
				return
			}
			if len(got) > 1 || time.Now().After(deadline) {
				t.Fatalf("xfsq_tree_full_in_seconds: %+v, want filling's workspace only", got)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// ledgerTo brings a fallback workspace's usage to bytes through the ledger.
func ledgerTo(t *testing.T, r *fixture.Root, project string, bytes uint64) {
	t.Helper()
	k := store.TreeKey{Project: project, Area: area.Workspace}
	_, u, _, err := sandbox.TestStore(r.Manager).Account(r.Ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if err := sandbox.TestStore(r.Manager).AddLedger(r.Ctx, k, int64(bytes)-int64(u.Bytes), 0, "test", time.Time{}); err != nil {
		t.Fatal(err)
	}
}
