package sandbox_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// TestReadsDoNotWalk: show, check and report read the last walk plus
// xfsq's own writes, and neither walk nor write unless asked; asked, they
// walk, and the walk is recorded (usage_as_of moves).
func TestReadsDoNotWalk(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		r.Add(100<<20, "omni")
		before, err := m.Show(ctx, "omni")
		if err != nil {
			t.Fatal(err)
		}
		ws := workspace(t, before)
		if ws.UsageWalkedAt == nil {
			t.Fatal("no usage_as_of after add, which walks")
		}
		// Written behind xfsq's back: counted from the next walk only.
		if err := os.WriteFile(filepath.Join(m.Root, "projects", "omni", "big"), make([]byte, 8<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		reads := map[string]func() (sandbox.TreeStatus, error){
			"show": func() (sandbox.TreeStatus, error) { p, err := m.Show(ctx, "omni"); return workspace(t, p), err },
			"check": func() (sandbox.TreeStatus, error) {
				a, err := m.Check(ctx, "omni")
				return workspace(t, sandbox.Project{Trees: a.Trees}), err
			},
			"report": func() (sandbox.TreeStatus, error) {
				rows, err := m.Report(ctx)
				return workspace(t, sandbox.Project{Trees: rows}), err
			},
		}
		for name, read := range reads {
			got, err := read()
			if err != nil {
				t.Fatal(err)
			}
			if got.UsedBytes != ws.UsedBytes || !got.UsageWalkedAt.Equal(*ws.UsageWalkedAt) {
				t.Errorf("%s walked: %d bytes as of %v, want %d as of %v", name, got.UsedBytes, got.UsageWalkedAt, ws.UsedBytes, ws.UsageWalkedAt)
			}
		}
		a, err := m.Check(ctx, "omni", sandbox.Read{Refresh: true})
		if err != nil {
			t.Fatal(err)
		}
		fresh := workspace(t, sandbox.Project{Trees: a.Trees})
		if fresh.UsedBytes < ws.UsedBytes+8<<20 || !fresh.UsageWalkedAt.After(*ws.UsageWalkedAt) {
			t.Errorf("check --refresh: %d bytes as of %v, want the 8 MiB file counted by a new walk", fresh.UsedBytes, fresh.UsageWalkedAt)
		}
		// The walk was recorded: a plain read sees it now.
		if got, _ := reads["show"](); got.UsedBytes != fresh.UsedBytes {
			t.Errorf("show after a refresh: %d bytes, want %d", got.UsedBytes, fresh.UsedBytes)
		}
	})
}

func workspace(t *testing.T, p sandbox.Project) sandbox.TreeStatus {
	t.Helper()
	for _, tr := range p.Trees {
		if tr.Area == area.Workspace {
			return tr
		}
	}
	t.Fatalf("no workspace tree in %+v", p.Trees)
	return sandbox.TreeStatus{}
}

// BenchmarkCheck1000 is xfsq project check, in process, on a fallback root
// of 1,000 projects: it must cost the same however many projects the root
// holds and however big their trees, since it walks nothing. "uncached" is
// a process's first check of a project (the CLI's every check); "cached"
// a long-lived manager's (the server's) while the store is unchanged.
func BenchmarkCheck1000(b *testing.B) {
	r := fixture.New(b, "sqlite", filepath.Join(b.TempDir(), "xfsq.db"))
	for i := range 1000 {
		r.Add(1<<30, fmt.Sprintf("p%04d", i))
	}
	for _, cached := range []bool{false, true} {
		name := map[bool]string{false: "uncached", true: "cached"}[cached]
		b.Run(name, func(b *testing.B) {
			for i := range 1000 { // every project read once: the cache is warm
				if _, err := r.Manager.Check(r.Ctx, fmt.Sprintf("p%04d", i)); err != nil {
					b.Fatal(err)
				}
			}
			for i := 0; b.Loop(); i++ {
				if !cached {
					sandbox.ForgetReads(r.Manager)
				}
				if _, err := r.Manager.Check(r.Ctx, fmt.Sprintf("p%04d", i%1000)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestCheckSeesOtherProcessesAtOnce: a long-lived manager answers checks
// from what it read while the store is unchanged (readcache.go); a change
// committed by another process — a limit lowered, a project removed — is
// in its next answer once store.GenerationLag (1 ms) has passed, and a cached answer handed out cannot be
// changed by its caller.
func TestCheckSeesOtherProcessesAtOnce(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		long, ctx := r.Manager, r.Ctx
		r.Add(100<<20, "omni")
		if err := os.WriteFile(filepath.Join(long.Root, "projects", "omni", "f"), make([]byte, 64<<10), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := long.Check(ctx, "omni", sandbox.Read{Refresh: true}); err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second answer comes from the cache
			a, err := long.Check(ctx, "omni")
			if err != nil || a.Decision != sandbox.Ok {
				t.Fatalf("before: %+v, %v", a, err)
			}
			a.Trees[0].UsedBytes = 1 << 62 // the caller's copy
		}
		other := r.Reopen()
		if _, err := other.Set(ctx, "omni", area.Workspace, sandbox.LimitChange{BytesHard: fixture.Size(16 << 10)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(store.GenerationLag) // another process's commit shows within it
		a, err := long.Check(ctx, "omni")
		if err != nil || a.Decision != sandbox.Deny {
			t.Errorf("after another process lowered the limit below usage: %+v, %v, want deny", a, err)
		}
		if ws := workspace(t, sandbox.Project{Trees: a.Trees}); ws.UsedBytes >= 1<<62 || ws.BytesHard != 16<<10 {
			t.Errorf("workspace %+v: a caller's change or the old limit leaked into the answer", ws)
		}
		if _, err := other.Remove(ctx, "omni", sandbox.RemoveOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(store.GenerationLag)
		if _, err := long.Check(ctx, "omni"); err == nil {
			t.Error("a project another process removed is still admitted")
		}
	})
}

// TestKeptAnswersAge: an answer kept while the store is unchanged still
// says how old its figure is now, not when it was first read.
func TestKeptAnswersAge(t *testing.T) {
	r := fixture.New(t, "sqlite", filepath.Join(t.TempDir(), "xfsq.db"))
	r.Add(1<<30, "omni")
	age := func() float64 {
		t.Helper()
		p, err := r.Manager.Show(r.Ctx, "omni")
		if err != nil {
			t.Fatal(err)
		}
		ws := workspace(t, p)
		if ws.UsageAgeSeconds == nil {
			t.Fatalf("no usage_age_seconds: %+v", ws)
		}
		return *ws.UsageAgeSeconds
	}
	first := age()
	time.Sleep(1100 * time.Millisecond)
	if second := age(); second < first+1 {
		t.Errorf("usage_age_seconds %v then %v a second later: the kept answer did not age", first, second)
	}
}
