package sandbox_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// A long-lived manager keeps each project's answer until that project
// changes: another process's commits to other projects (a snapshot pass,
// a neighbour's writes) leave it kept, a commit to it or to the settings
// makes it read again, and the answer then shows the change.
func TestKeptAnswersSurviveOtherProjectsCommits(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		long, ctx := r.Manager, r.Ctx
		r.Add(100<<20, "alpha", "beta")
		other := r.Reopen()
		check := func(name string) sandbox.Admission {
			t.Helper()
			a, err := long.Check(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		check("alpha")
		check("beta")
		steps := []struct {
			name   string
			change func() error
			reread []string // the projects whose next check reads the store
		}{
			{"nothing", func() error { return nil }, nil},
			{"another process changes beta", func() error {
				_, err := other.Set(ctx, "beta", area.Workspace, sandbox.LimitChange{BytesHard: fixture.Size(1 << 20)})
				return err
			}, []string{"beta"}},
			{"another process walks beta", func() error {
				_, err := other.Show(ctx, "beta", sandbox.Read{Refresh: true})
				return err
			}, []string{"beta"}},
			{"another process changes alpha", func() error {
				_, err := other.Set(ctx, "alpha", area.Workspace, sandbox.LimitChange{BytesHard: fixture.Size(2 << 20)})
				return err
			}, []string{"alpha"}},
			{"another process changes a setting", func() error {
				_, _, err := other.SetSetting(ctx, "soft_grace", "3h")
				return err
			}, []string{"alpha", "beta"}},
		}
		for _, s := range steps {
			if err := s.change(); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			time.Sleep(store.GenerationLag) // another process's commit shows within it
			for _, name := range []string{"alpha", "beta"} {
				before := sandbox.Reread(long)
				a := check(name)
				want := int64(0)
				for _, n := range s.reread {
					if n == name {
						want = 1
					}
				}
				if got := sandbox.Reread(long) - before; got != want {
					t.Errorf("%s: checking %s read the store %d times, want %d", s.name, name, got, want)
				}
				sandbox.ForgetReads(other.Manager) // the store's answer, not a kept one
				fresh, err := other.Check(ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				kept, now := workspace(t, sandbox.Project{Trees: a.Trees}), workspace(t, sandbox.Project{Trees: fresh.Trees})
				if kept.BytesHard != now.BytesHard || kept.UsedBytes != now.UsedBytes || !timeEq(kept.UsageWalkedAt, now.UsageWalkedAt) {
					t.Errorf("%s: %s kept %+v, the store says %+v", s.name, name, kept, now)
				}
			}
		}
	})
}

// Usage, kept between calls by a long-lived manager (a metrics scrape),
// always equals what a fresh read of each tree says — usage, limits, walk
// time and grace ends — and after a change to one project reads only that
// project again.
func TestUsageKeptEqualsFreshReads(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		long, ctx := r.Manager, r.Ctx
		names := []string{"p0", "p1", "p2", "p3"}
		r.Add(100<<20, names...)
		other := r.Reopen()
		compare := func(step string, wantReread int64) {
			t.Helper()
			before := sandbox.Reread(long)
			got, err := long.Usage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n := sandbox.Reread(long) - before; wantReread >= 0 && n != wantReread {
				t.Errorf("%s: Usage read %d projects from the store, want %d", step, n, wantReread)
			}
			// Every project's trees and the root's inbound tree.
			if len(got) != len(names)*len(area.OfProject)+1 {
				t.Fatalf("%s: %d trees, want %d", step, len(got), len(names)*len(area.OfProject)+1)
			}
			report, err := other.Report(ctx) // read afresh, tree by tree
			if err != nil {
				t.Fatal(err)
			}
			fresh := map[[2]string]sandbox.TreeStatus{}
			for _, f := range report {
				fresh[[2]string{f.Project, f.Area}] = f
			}
			for _, u := range got {
				f, ok := fresh[[2]string{u.Project, u.Area}]
				if !ok {
					t.Fatalf("%s: %s/%s not in a fresh read", step, u.Project, u.Area)
				}
				if u.UsedBytes != f.UsedBytes || u.UsedInodes != f.UsedInodes || u.BytesSoft != f.BytesSoft || u.BytesHard != f.BytesHard ||
					u.InodesSoft != f.InodesSoft || u.InodesHard != f.InodesHard || !timeEq(u.UsageWalkedAt, f.UsageWalkedAt) ||
					!timeEq(u.BytesGraceEndsAt, f.BytesGraceEndsAt) || !timeEq(u.InodesGraceEndsAt, f.InodesGraceEndsAt) {
					t.Errorf("%s: Usage says %s/%s is %+v, a fresh read %+v", step, u.Project, u.Area, u, f)
				}
			}
		}
		compare("first", int64(len(names))+1) // and the root's inbound tree's owner
		compare("unchanged", 0)
		// p1 over its soft limit, noticed by another process's walk: its
		// grace timer starts.
		if err := os.WriteFile(filepath.Join(long.Root, "projects", "p1", "f"), make([]byte, 64<<10), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := other.Set(ctx, "p1", area.Workspace, sandbox.LimitChange{BytesSoft: fixture.Size(16 << 10)}); err != nil {
			t.Fatal(err)
		}
		if _, err := other.Show(ctx, "p1", sandbox.Read{Refresh: true}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(store.GenerationLag)
		compare("p1 over its soft limit", 1)
		if _, _, err := other.SetSetting(ctx, "soft_grace", "1m"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(store.GenerationLag)
		compare("grace shortened", -1) // every project: how many reads is the cache's business
		if _, err := other.Remove(ctx, "p3", sandbox.RemoveOptions{}); err != nil {
			t.Fatal(err)
		}
		names = names[:3]
		time.Sleep(store.GenerationLag)
		compare("p3 removed", 1)
	})
}

func timeEq(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// Warm leaves a server nothing to read for its first requests: every
// project's check is answered from what it kept, and the overview is the
// one Warm assembled, not assembled again.
func TestWarmFillsWhatTheFirstRequestsRead(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(100<<20, "alpha", "beta", "gamma")
		m, ctx := r.Reopen().Manager, r.Ctx // a manager nothing has read through yet
		ov, err := m.Warm(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(ov.Projects) != 3 {
			t.Fatalf("warm overview has %d projects, want 3", len(ov.Projects))
		}
		before := sandbox.Reread(m)
		for _, name := range []string{"alpha", "beta", "gamma"} {
			if _, err := m.Check(ctx, name); err != nil {
				t.Fatal(err)
			}
		}
		if n := sandbox.Reread(m) - before; n != 0 {
			t.Errorf("after Warm, three checks read %d projects from the store, want 0", n)
		}
		again, err := m.Overview(ctx, sandbox.OverviewOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if again != ov {
			t.Error("after Warm, the first overview was assembled again instead of answered from what Warm assembled")
		}
	})
}

// The overview asks the store's change mark only when the generation
// moved: another process's change still shows in the next overview once
// store.GenerationLag has passed, and this process's at once.
func TestOverviewSeesChangesThroughTheGenerationGate(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		long, ctx := r.Manager, r.Ctx
		r.Add(100<<20, "alpha")
		other := r.Reopen()
		quotaOf := func(step string) uint64 {
			t.Helper()
			ov, err := long.Overview(ctx, sandbox.OverviewOptions{})
			if err != nil || len(ov.Projects) != 1 {
				t.Fatalf("%s: %v, %+v", step, err, ov)
			}
			return ov.Projects[0].QuotaBytes
		}
		quotaOf("first")
		quotaOf("again, nothing changed")
		if _, err := other.Set(ctx, "alpha", area.Workspace, sandbox.LimitChange{BytesHard: fixture.Size(7 << 20)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(store.GenerationLag)
		if got := quotaOf("after another process's change"); got != 7<<20 {
			t.Errorf("after another process set 7 MiB the overview shows %d", got)
		}
		if _, err := long.Set(ctx, "alpha", area.Workspace, sandbox.LimitChange{BytesHard: fixture.Size(9 << 20)}); err != nil {
			t.Fatal(err)
		}
		if got := quotaOf("after this process's change"); got != 9<<20 {
			t.Errorf("right after this process set 9 MiB the overview shows %d", got)
		}
	})
}

// A kept answer is handed out as a copy: a caller that changes what it was
// given (a handler trimming trees, say) cannot change the next caller's.
func TestKeptAnswersAreTheCallersOwn(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		r.Add(100<<20, "alpha")
		show := func() sandbox.Project {
			t.Helper()
			p, err := m.Show(ctx, "alpha")
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		show() // read and kept
		before := sandbox.Reread(m)
		first := show()
		if sandbox.Reread(m) != before {
			t.Fatal("the second Show read the store: nothing was kept to test")
		}
		want := first.Trees[0].UsedBytes
		for i := range first.Trees {
			first.Trees[i].UsedBytes, first.Trees[i].Area = 1<<50, "scribbled"
		}
		if p := show(); p.Trees[0].UsedBytes != want || p.Trees[0].Area == "scribbled" {
			t.Fatalf("a caller's change to its answer reached the next caller: %+v", p.Trees[0])
		}
	})
}
