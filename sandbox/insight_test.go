package sandbox_test

import (
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

func reportRow(t *testing.T, r *fixture.Root, project, a string) sandbox.TreeStatus {
	t.Helper()
	rows, err := r.Manager.Report(r.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		if row.Project == project && row.Area == a {
			return row
		}
	}
	t.Fatalf("no report row of %s/%s", project, a)
	return sandbox.TreeStatus{}
}

// What the sweep policies would free is what the last plan (a dry run
// here) found, per tree and in the overview, beside the limits' promise
// against the disk; after the sweep, what is left of it.
func TestReclaimableAndPromised(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<30, "omni", "beta")
		set(t, r, "cache_quota_per_project", "1k")
		oldCache(t, r, "omni", 3)
		m := r.Manager
		if row := reportRow(t, r, "omni", "cache"); row.ReclaimableBytes != nil {
			t.Fatalf("reclaimable before any plan: %d, want none known", *row.ReclaimableBytes)
		}
		dry, err := m.Sweep(r.Ctx, sandbox.SweepOptions{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		cache := reportRow(t, r, "omni", "cache")
		if cache.ReclaimableBytes == nil || *cache.ReclaimableBytes != dry.BytesFreed || dry.BytesFreed < 3*4096 {
			t.Errorf("omni's cache after a dry run that would free %d bytes: reclaimable %v", dry.BytesFreed, cache.ReclaimableBytes)
		}
		if b := reportRow(t, r, "beta", "cache"); b.ReclaimableBytes == nil || *b.ReclaimableBytes != 0 {
			t.Errorf("beta's cache, planned with nothing to free: %v, want 0", b.ReclaimableBytes)
		}
		ov, err := r.Reopen().Manager.Overview(r.Ctx, sandbox.OverviewOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rows, _ := m.Report(r.Ctx)
		var promised uint64
		for _, row := range rows {
			promised += row.BytesHard
		}
		d := ov.Disk
		if d.ReclaimableBytes != dry.BytesFreed || d.PromisedBytes != promised || d.TotalBytes == 0 ||
			d.OvercommitRatio != float64(promised)/float64(d.TotalBytes) {
			t.Errorf("overview disk: %+v, want %d reclaimable, %d promised of %d", d, dry.BytesFreed, promised, d.TotalBytes)
		}
		for _, p := range ov.Projects {
			if want := map[string]uint64{"omni": dry.BytesFreed}[p.Project]; p.ReclaimableBytes != want {
				t.Errorf("overview of %s: %d reclaimable, want %d", p.Project, p.ReclaimableBytes, want)
			}
		}
		if _, err := m.Sweep(r.Ctx, sandbox.SweepOptions{Projects: []string{"omni"}}); err != nil {
			t.Fatal(err)
		}
		if c := reportRow(t, r, "omni", "cache"); c.ReclaimableBytes == nil || *c.ReclaimableBytes != 0 {
			t.Errorf("after the sweep freed it: %v, want 0", c.ReclaimableBytes)
		}
	})
}

// The report's full-in is the trend of the stored snapshots and the
// usage now: a workspace growing 64 KiB an hour for a day, 1 MiB short of
// its limit, is full in about 16 hours.
func TestReportFullIn(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(0, "omni")
		m := r.Manager
		writeOutside(t, r, "projects/omni/data", 2<<20)
		if _, err := m.Snapshot(r.Ctx, sandbox.SnapshotOptions{Projects: []string{"omni"}}); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		used := reportRow(t, r, "omni", "workspace").UsedBytes
		limit := used + 1<<20
		if _, err := m.Set(r.Ctx, "omni", "", sandbox.LimitChange{BytesHard: fixture.Size(limit)}); err != nil {
			t.Fatal(err)
		}
		if row := reportRow(t, r, "omni", "workspace"); row.FullInSeconds != nil {
			t.Fatalf("full in with no history: %v", *row.FullInSeconds)
		}
		for h := 24; h >= 1; h-- {
			err := sandbox.TestStore(m).InTx(r.Ctx, func(tx *store.Tx) error {
				return tx.AddSnapshot(r.Ctx, store.Snapshot{Project: "omni", Area: "workspace", At: now.Add(-time.Duration(h) * time.Hour),
					SizeBytes: used - uint64(h)*64<<10, KernelBytes: -1}, []byte{}, 35*24*time.Hour)
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		row := reportRow(t, r, "omni", "workspace")
		if row.FullInSeconds == nil || (time.Duration(*row.FullInSeconds*float64(time.Second))-16*time.Hour).Abs() > 10*time.Minute {
			t.Errorf("full in %v s, want about 16 h", row.FullInSeconds)
		}
	})
}
