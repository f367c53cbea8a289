package sandbox_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox"
)

// crossing is a crossing record as the journal holds it.
type crossing struct {
	Project string
	journal.QuotaExceeded
	OK *journal.QuotaOK
}

// crossings reads the journal's crossing records of both kinds, oldest first.
func crossings(t *testing.T, r *fixture.Root) []crossing {
	t.Helper()
	var out []crossing
	evs := r.Events("")
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		switch e.Type {
		case journal.TypeQuotaExceeded:
			var p journal.QuotaExceeded
			if err := json.Unmarshal(e.Payload, &p); err != nil {
				t.Fatal(err)
			}
			out = append(out, crossing{Project: e.Project, QuotaExceeded: p})
		case journal.TypeQuotaOK:
			var p journal.QuotaOK
			if err := json.Unmarshal(e.Payload, &p); err != nil {
				t.Fatal(err)
			}
			out = append(out, crossing{Project: e.Project, OK: &p})
		}
	}
	return out
}

// kinds lists records as "exceeded bytes_soft walk" / "ok bytes_soft walk".
func kinds(cs []crossing) []string {
	var out []string
	for _, c := range cs {
		if c.OK != nil {
			out = append(out, "ok "+c.OK.Limit+" "+c.OK.SeenBy)
		} else {
			out = append(out, "exceeded "+c.Limit+" "+c.SeenBy)
		}
	}
	return out
}

func writeOutside(t *testing.T, r *fixture.Root, rel string, n int) {
	t.Helper()
	p := filepath.Join(r.Manager.Root, rel)
	if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
		t.Fatal(err)
	}
}

func setLimits(t *testing.T, r *fixture.Root, name string, c sandbox.LimitChange) {
	t.Helper()
	if _, err := r.Manager.Set(r.Ctx, name, "", c); err != nil {
		t.Fatal(err)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A walk that finds a tree past a limit journals it once, with the
// figures and when the grace ends; walks that find it still there journal
// nothing; the walk that finds it back under journals storage.quota_ok.
func TestCrossingSeenByAWalk(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<20, "omni")
		setLimits(t, r, "omni", sandbox.LimitChange{BytesSoft: fixture.Size(256 << 10)})
		m := r.Manager
		snap := func() {
			t.Helper()
			if _, err := m.Snapshot(r.Ctx, sandbox.SnapshotOptions{Projects: []string{"omni"}}); err != nil {
				t.Fatal(err)
			}
		}
		writeOutside(t, r, "projects/omni/big", 512<<10)
		snap()
		snap()
		got := crossings(t, r)
		if want := []string{"exceeded bytes_soft walk"}; !equal(kinds(got), want) {
			t.Fatalf("after two walks over the soft limit: %v, want %v", kinds(got), want)
		}
		x := got[0]
		if x.Project != "omni" || x.Area != "workspace" || x.UsedBytes < 512<<10 || x.LimitValue == nil || *x.LimitValue != 256<<10 ||
			x.BytesHard == nil || *x.BytesHard != 1<<20 || x.GraceEndsAt == nil || time.Until(*x.GraceEndsAt) < 6*24*time.Hour {
			t.Errorf("the record: %+v (grace ends %v), want omni's workspace at 512 KiB+ of 256 KiB soft, grace ending in 7 days", x, x.GraceEndsAt)
		}
		writeOutside(t, r, "projects/omni/big", 2<<20)
		snap()
		os.Remove(filepath.Join(m.Root, "projects/omni/big"))
		// A walk begun within CtimeLag of the removal may have raced it:
		// its figure is a floor under the old one, not the tree's (a walk
		// that may have missed something never lowers a baseline).
		time.Sleep(2 * sandbox.CtimeLag)
		snap()
		want := []string{"exceeded bytes_soft walk", "exceeded bytes_hard walk", "ok bytes_soft walk", "ok bytes_hard walk"}
		if got := crossings(t, r); !equal(kinds(got), want) {
			t.Errorf("over the hard limit, then back under both: %v, want %v", kinds(got), want)
		} else if ok := got[2].OK; ok.ExceededAt == nil || ok.LimitValue != 256<<10 || ok.UsedBytes >= 256<<10 {
			t.Errorf("storage.quota_ok: %+v, want the figures back under and when it was exceeded", ok)
		}
	})
}

// An admission check that finds a tree past a limit (here: one lowered
// under it) journals it, and a check of the same state does not again.
func TestCrossingSeenByAdmission(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<20, "omni")
		m := r.Manager
		setLimits(t, r, "omni", sandbox.LimitChange{InodesHard: fixture.Size(1)}) // the skeleton has more
		for range 3 {
			if a, err := m.Check(r.Ctx, "omni"); err != nil || a.Decision != sandbox.Deny {
				t.Fatalf("check: %+v %v", a, err)
			}
		}
		if got, want := kinds(crossings(t, r)), []string{"exceeded inodes_hard admission"}; !equal(got, want) {
			t.Errorf("three checks at the inode limit: %v, want %v", got, want)
		}
		setLimits(t, r, "omni", sandbox.LimitChange{InodesHard: fixture.Size(0)})
		if _, err := m.Check(r.Ctx, "omni"); err != nil {
			t.Fatal(err)
		}
		if got, want := kinds(crossings(t, r)), []string{"exceeded inodes_hard admission", "ok inodes_hard admission"}; !equal(got, want) {
			t.Errorf("the limit removed: %v, want %v", got, want)
		}
	})
}

// A scrape (Usage) that sees a crossing records it in the background
// without waiting: the fallback's figures, read as a scrape reads them.
func TestCrossingSeenByAScrape(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<20, "omni")
		setLimits(t, r, "omni", sandbox.LimitChange{BytesHard: fixture.Size(4096)}) // the skeleton holds more
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := r.Manager.Usage(r.Ctx); err != nil {
				t.Fatal(err)
			}
			got := kinds(crossings(t, r))
			if equal(got, []string{"exceeded bytes_hard scrape"}) {
				return
			}
			if len(got) > 1 || time.Now().After(deadline) {
				t.Fatalf("scrapes of a tree over its hard limit: %v, want one record seen by the scrape", got)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// Two processes that see the same crossing at once journal it once, and
// a second process that sees it after the first recorded it, not again.
func TestCrossingJournalledOnceByTwoObservers(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<20, "omni")
		other := r.Reopen()
		setLimits(t, r, "omni", sandbox.LimitChange{InodesHard: fixture.Size(1)})
		var wg sync.WaitGroup
		for _, m := range []*sandbox.Manager{r.Manager, other.Manager, r.Manager, other.Manager} {
			wg.Go(func() {
				for range 5 {
					if _, err := m.Check(r.Ctx, "omni"); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		third := r.Reopen()
		if _, err := third.Manager.Snapshot(r.Ctx, sandbox.SnapshotOptions{Projects: []string{"omni"}}); err != nil {
			t.Fatal(err)
		}
		if got, want := kinds(crossings(t, r)), []string{"exceeded inodes_hard admission"}; !equal(got, want) {
			t.Errorf("two processes checking at once, then a third walking: %v, want %v", got, want)
		}
	})
}
