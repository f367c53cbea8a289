package retention

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/sandbox/internal/coretest"
	"github.com/xfsq/xfsq/sandbox/internal/settingwrites"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/sweep"
)

// Applying a saved plan, each entry is decided again by the planner: an
// entry the plan names outside its project's tree, in uploads/, inbox/ or
// .git, that is not trash, or whose policy no longer holds, is dropped
// with the reason; the rest is kept.
func TestRederiveDropsWhatThePlannerWouldNot(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, m := sweeperWithOmni(t, root)
	if err := coretest.Add(ctx, m, "beta", core.LimitChange{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := settingwrites.New(m).SetSetting(ctx, "cache_quota_per_project", "1k"); err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-60 * 24 * time.Hour)
	for _, p := range []string{"cache/omni/old/blob", "projects/beta/uploads/x.log", "projects/omni/uploads/a.log", "projects/omni/inbox/b.tmp",
		"projects/omni/.git/x.log", "projects/omni/build.log", "projects/omni/src/main.go"} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(full, make([]byte, 8192), 0o644)
		for d := full; d != root; d = filepath.Dir(d) {
			os.Chtimes(d, long, long)
		}
	}
	ev := func(area, p, policy string) sweep.Eviction {
		return sweep.Eviction{Project: "omni", Area: area, Path: p, Policy: policy}
	}
	saved := sweep.Plan{Evict: []sweep.Eviction{
		ev(area.Workspace, "projects/beta/uploads", sweep.PolicyTrash),
		ev(area.Workspace, "projects/omni/../beta/uploads", sweep.PolicyTrash),
		ev(area.Workspace, "projects/omni/uploads", sweep.PolicyTrash),
		ev(area.Workspace, "projects/omni/inbox/b.tmp", sweep.PolicyTrash),
		ev(area.Workspace, "projects/omni/.git/x.log", sweep.PolicyTrash),
		ev(area.Workspace, "projects/omni/src/main.go", sweep.PolicyTrash),
		ev(area.Cache, "projects/omni/build.log", sweep.PolicyCache),
		ev(area.Workspace, "projects/omni/build.log", sweep.PolicyCache), // another policy than the planner's
		ev(area.Workspace, "projects/omni/build.log", sweep.PolicyTrash),
		ev(area.Cache, "cache/omni/old", sweep.PolicyCache),
		{Project: "beta", Area: area.Workspace, Path: "projects/beta/uploads", Policy: sweep.PolicyTrash}, // not locked
	}}
	policy, err := s.Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := saferm.Open(m.Root)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	fresh, err := s.planSweep(ctx, dir, []string{"omni"}, map[string]bool{area.Cache: true, area.Workspace: true, area.Scratch: true}, policy, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	got := rederive(saved, fresh, []string{"omni"})
	var kept []string
	for _, e := range got.Evict {
		kept = append(kept, e.Area+":"+e.Path)
	}
	if want := []string{"workspace:projects/omni/build.log", "cache:cache/omni/old"}; !slices.Equal(kept, want) {
		t.Errorf("kept %q, want %q", kept, want)
	}
	if len(got.Skipped) != 8 {
		t.Errorf("dropped %d entries, want 8 (beta's is not this sweep's): %+v", len(got.Skipped), got.Skipped)
	}
	for _, s := range got.Skipped {
		if s.Reason == "" || (!strings.Contains(s.Reason, "not in") && !strings.Contains(s.Reason, "since planning")) {
			t.Errorf("%s dropped without a reason that says why: %q", s.Path, s.Reason)
		}
	}
}
