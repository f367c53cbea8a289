package sandbox_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/sweep"
)

// The root's inbound tree hangs off the owner row _root, which is no
// tenant project: List and the overview's projects[] leave it out, a sweep
// of every project covers it as _root's own (inbound_ttl), and a project cannot be added,
// removed or shown under its name; Report and a scheduled snapshot pass
// show and walk it once, beside the projects' trees.
func TestInboundTreeIsNoTenantProject(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		r.Add(10<<20, "omni", "beta")
		os.MkdirAll(filepath.Join(m.Root, "inbound/chan1"), 0o755)
		os.WriteFile(filepath.Join(m.Root, "inbound/chan1/old.tmp"), make([]byte, 8<<10), 0o644)

		ps, err := m.List(ctx)
		if err != nil || len(ps) != 2 || slices.ContainsFunc(ps, func(p store.Project) bool { return p.Name == sandbox.RootOwner }) {
			t.Errorf("List: %+v %v, want omni and beta alone", ps, err)
		}
		ov, err := m.Overview(ctx, sandbox.OverviewOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(ov.Projects) != 2 || slices.ContainsFunc(ov.Projects, func(p sandbox.ProjectOverview) bool { return p.Project == sandbox.RootOwner }) {
			t.Errorf("overview projects[]: %+v, want omni and beta alone", ov.Projects)
		}

		snaps, err := m.Snapshot(ctx, sandbox.SnapshotOptions{Scheduled: true})
		if err != nil {
			t.Fatal(err)
		}
		walked := 0
		for _, s := range snaps {
			if s.Project == sandbox.RootOwner {
				walked++
				if s.Area != area.Inbound || s.SizeBytes < 8<<10 {
					t.Errorf("the pass's walk of the inbound tree: %+v", s)
				}
			}
		}
		if walked != 1 || len(snaps) != 2*len(area.OfProject)+1 {
			t.Errorf("a scheduled pass walked the inbound tree %d times among %d walks, want once among %d", walked, len(snaps), 2*len(area.OfProject)+1)
		}
		rows, err := m.Report(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var inbound []sandbox.TreeStatus
		for _, row := range rows {
			if row.Project == sandbox.RootOwner {
				inbound = append(inbound, row)
			}
		}
		if len(inbound) != 1 || inbound[0].Area != area.Inbound || inbound[0].Path != "inbound" || inbound[0].UsedBytes < 8<<10 || inbound[0].BytesHard != 10<<30 {
			t.Errorf("report's rows of %s: %+v, want the inbound tree once, with its usage and limit", sandbox.RootOwner, inbound)
		}

		// A sweep of every project covers the inbound tree as _root's, by
		// inbound_ttl alone: what was staged just now stays.
		out, err := m.Sweep(ctx, sandbox.SweepOptions{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Plan.Evict) != 0 || !slices.ContainsFunc(out.Skipped, func(s sweep.Skip) bool {
			return s.Project == sandbox.RootOwner && s.Path == "inbound/chan1" && strings.Contains(s.Reason, "busy_grace")
		}) {
			t.Errorf("a sweep of every project: plans %+v, skips %+v; want inbound/chan1 looked at and left (busy_grace)", out.Plan.Evict, out.Skipped)
		}
		for _, n := range []string{"omni", "beta"} {
			if _, err := m.Sweep(ctx, sandbox.SweepOptions{DryRun: true, Projects: []string{n}, Areas: []string{area.Inbound}}); errkind.Of(err) != errkind.Input ||
				!strings.Contains(err.Error(), "no inbound tree") {
				t.Errorf("a sweep of %s's inbound: %v, want an input error saying a project has none", n, err)
			}
		}
		if _, err := m.Sweep(ctx, sandbox.SweepOptions{DryRun: true, Projects: []string{sandbox.RootOwner}, Areas: []string{area.Cache}}); errkind.Of(err) != errkind.Input {
			t.Errorf("a sweep of %s's cache: %v, want an input error", sandbox.RootOwner, err)
		}

		if _, err := m.Add(ctx, sandbox.RootOwner, sandbox.AddOptions{}); errkind.Of(err) != errkind.Input {
			t.Errorf("Add %s: %v, want an input error", sandbox.RootOwner, err)
		}
		if _, err := m.Remove(ctx, sandbox.RootOwner, sandbox.RemoveOptions{Purge: true, Force: true}); errkind.Of(err) != errkind.Input {
			t.Errorf("Remove %s: %v, want an input error", sandbox.RootOwner, err)
		}
		if _, err := m.Show(ctx, sandbox.RootOwner); errkind.Of(err) != errkind.Input {
			t.Errorf("Show %s: %v, want an input error", sandbox.RootOwner, err)
		}
		if _, err := os.Stat(filepath.Join(m.Root, "inbound/chan1/old.tmp")); err != nil {
			t.Errorf("staged data: %v", err)
		}
		if trees, _ := sandbox.TestStore(m).Trees(ctx, sandbox.RootOwner); len(trees) != 1 {
			t.Errorf("the inbound tree after the refusals: %+v", trees)
		}
	})
}

// The scheduled sweep pass (xfsq serve) covers the root's inbound tree as
// its own retention: an entry staged and untouched for inbound_ttl goes,
// journalled under _root with policy inbound_ttl, and on the fallback the
// tree's figure drops by what went without another walk.
func TestSweepPassCoversInbound(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		r.Add(1<<30, "omni")
		old := time.Now().Add(-3 * 24 * time.Hour)
		for _, p := range []string{"inbound/stale/part1", "inbound/stale/part2"} {
			full := filepath.Join(m.Root, p)
			os.MkdirAll(filepath.Dir(full), 0o755)
			if err := os.WriteFile(full, make([]byte, 64<<10), 0o644); err != nil {
				t.Fatal(err)
			}
			os.Chtimes(full, old, old)
		}
		os.Chtimes(filepath.Join(m.Root, "inbound/stale"), old, old)
		// The ledger is credited only inodes unchanged since before the
		// last walk began, less CtimeLag (RemovalCutoff): a walk started
		// within it of the Chtimes above credits nothing, the safe side.
		time.Sleep(2 * sandbox.CtimeLag)
		usage := func() uint64 {
			rows, err := m.Report(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range rows {
				if row.Project == sandbox.RootOwner {
					return row.UsedBytes
				}
			}
			t.Fatal("no inbound row")
			return 0
		}
		if _, err := m.Snapshot(ctx, sandbox.SnapshotOptions{Projects: []string{sandbox.RootOwner}, Area: area.Inbound}); err != nil {
			t.Fatal(err)
		}
		before := usage()
		if _, _, err := m.SetSetting(ctx, "sweep_interval", "6h"); err != nil {
			t.Fatal(err)
		}
		if out, err := m.RunPass(ctx, sandbox.PassSweep); err != nil || !out.Ran {
			t.Fatalf("the sweep pass: %+v %v", out, err)
		}
		if _, err := os.Lstat(filepath.Join(m.Root, "inbound/stale")); !os.IsNotExist(err) {
			t.Errorf("inbound/stale after the pass: %v, want gone", err)
		}
		swept := r.Events(journal.TypeSwept)
		if len(swept) != 1 || !strings.Contains(string(swept[0].Payload), `"`+sandbox.RootOwner+`"`) {
			t.Errorf("storage.swept: %+v, want one naming %s", swept, sandbox.RootOwner)
		}
		var states []string
		for _, ev := range r.Events(journal.TypeEvicted) {
			p := string(ev.Payload)
			if ev.Project != sandbox.RootOwner || !strings.Contains(p, `"policy":"inbound_ttl"`) || !strings.Contains(p, `"path":"inbound/stale"`) {
				t.Errorf("journalled %s %s", ev.Project, p)
			}
			states = append(states, p[strings.Index(p, `"state"`):][:15])
		}
		if len(states) != 2 {
			t.Errorf("storage.evicted: %v, want pending then done", states)
		}
		if m.IsXFS() {
			return
		}
		if after := usage(); after > before-128<<10 {
			t.Errorf("the inbound tree after the pass: %d bytes, want %d less the 128 KiB freed (the ledger credited)", after, before)
		}
	})
}
