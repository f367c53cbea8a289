package sandbox_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox"
)

// TestLifecycle drives add, show, set, check, list and rm in process, as
// the server will, on each store driver; every change is journalled under
// the actor its context names.
func TestLifecycle(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, sandbox.WithActor(r.Ctx, "token-ci")
		p, err := m.Add(ctx, "omni", sandbox.AddOptions{Workspace: sandbox.LimitChange{BytesHard: fixture.Size(10 << 20)}})
		if err != nil {
			t.Fatal(err)
		}
		if p.Name != "omni" || len(p.Trees) != len(area.OfProject) {
			t.Fatalf("add: %+v", p)
		}
		for _, d := range []string{"projects/omni/uploads", "projects/omni/inbox", "cache/omni", "scratch/omni"} {
			if fi, err := os.Stat(filepath.Join(m.Root, d)); err != nil || !fi.IsDir() {
				t.Errorf("%s: %v", d, err)
			}
		}
		if _, err := m.Add(ctx, "omni", sandbox.AddOptions{}); !errors.Is(err, sandbox.ErrExists) || errkind.Of(err) != errkind.Conflict {
			t.Errorf("second add: %v (kind %s), want a conflict", err, errkind.Of(err))
		}
		if _, err := m.Add(ctx, "Bad Name", sandbox.AddOptions{}); errkind.Of(err) != errkind.Input {
			t.Errorf("bad name: %v (kind %s), want input", err, errkind.Of(err))
		}
		if _, err := m.Show(ctx, "ghost"); !errors.Is(err, sandbox.ErrNotFound) || errkind.Of(err) != errkind.NotFound {
			t.Errorf("show ghost: %v (kind %s), want not found", err, errkind.Of(err))
		}
		p, err = m.Set(ctx, "omni", area.Workspace, sandbox.LimitChange{BytesSoft: fixture.Size(5 << 20)})
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range p.Trees {
			if tr.Area == area.Workspace && (tr.BytesSoft != 5<<20 || tr.BytesHard != 10<<20) {
				t.Errorf("set: %+v", tr)
			}
		}
		a, err := m.Check(ctx, "omni")
		if err != nil || a.Decision != sandbox.Ok {
			t.Fatalf("check: %v %+v", err, a)
		}
		ps, err := m.List(ctx)
		if err != nil || len(ps) != 1 {
			t.Fatalf("list: %v %+v", err, ps)
		}
		res, err := m.Remove(ctx, "omni", sandbox.RemoveOptions{Purge: true})
		if err != nil || !res.Purged {
			t.Fatalf("rm --purge: %v %+v", err, res)
		}
		if _, err := os.Stat(filepath.Join(m.Root, "projects/omni")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("purged tree still there: %v", err)
		}
		if ps, err := m.List(ctx); err != nil || ps == nil || len(ps) != 0 {
			t.Errorf("list after rm: %v %#v, want an empty, non-nil list", err, ps)
		}
		for _, typ := range []journal.Type{"project.added", "quota.changed"} {
			evs := r.Events(typ)
			if len(evs) != 1 || evs[0].Actor != "token-ci" || evs[0].Host != fixture.Host {
				t.Errorf("%s: %+v, want one event by token-ci", typ, evs)
			}
		}
	})
}

// TestAddRollback: an add that fails part-way leaves no project and no
// directory it made, and the name can be added once the obstacle is gone.
func TestAddRollback(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m := r.Manager
		obstacle := filepath.Join(m.Root, "cache", "omni")
		if err := os.WriteFile(obstacle, []byte("not a directory"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Add(r.Ctx, "omni", sandbox.AddOptions{}); err == nil {
			t.Fatal("add over a file where its cache tree goes succeeded")
		}
		if _, err := m.Show(r.Ctx, "omni"); !errors.Is(err, sandbox.ErrNotFound) {
			t.Errorf("after a failed add: %v, want not found", err)
		}
		if _, err := os.Stat(filepath.Join(m.Root, "projects", "omni")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("rollback left the workspace it made: %v", err)
		}
		if data, err := os.ReadFile(obstacle); err != nil || string(data) != "not a directory" {
			t.Errorf("rollback touched a file it did not make: %v %q", err, data)
		}
		os.Remove(obstacle)
		r.Add(1<<20, "omni")
		if len(r.Events("project.added")) != 1 {
			t.Errorf("project.added events: %+v", r.Events("project.added"))
		}
	})
}

// TestDoctorInProcess: a clean root has no drift; a tree deleted behind
// xfsq's back is found, and --fix makes it again and journals the repair.
func TestDoctorInProcess(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m := r.Manager
		r.Add(1<<20, "omni")
		fs, err := m.Doctor(r.Ctx, false)
		if err != nil || len(fs) != 0 || fs == nil {
			t.Fatalf("doctor on a clean root: %v %#v, want an empty, non-nil list", err, fs)
		}
		if err := os.RemoveAll(filepath.Join(m.Root, "cache", "omni")); err != nil {
			t.Fatal(err)
		}
		fs, err = m.Doctor(r.Ctx, false)
		if err != nil || len(fs) != 1 || fs[0].Kind != sandbox.MissingDirectory || fs[0].Fixed {
			t.Fatalf("doctor: %v %+v", err, fs)
		}
		if !sandbox.Unresolved(fs) {
			t.Error("a missing directory is not unresolved drift")
		}
		fs, err = m.Doctor(sandbox.WithActor(r.Ctx, "doctor-test"), true)
		if err != nil || len(fs) != 1 || !fs[0].Fixed {
			t.Fatalf("doctor --fix: %v %+v", err, fs)
		}
		if fi, err := os.Stat(filepath.Join(m.Root, "cache", "omni")); err != nil || !fi.IsDir() {
			t.Errorf("not made again: %v", err)
		}
		if evs := r.Events("doctor.repaired"); len(evs) != 1 || evs[0].Actor != "doctor-test" {
			t.Errorf("doctor.repaired: %+v", evs)
		}
		if fs, err := m.Doctor(r.Ctx, false); err != nil || len(fs) != 0 {
			t.Errorf("after --fix: %v %+v", err, fs)
		}
	})
}

// TestSweepInProcess: a cache over cache_quota_per_project loses its least
// recently modified entries, first as a plan (nothing deleted), then for
// real, each deletion journalled; a saved plan is refused once applied.
func TestSweepInProcess(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		r.Add(1<<30, "omni")
		if _, _, err := m.SetSetting(ctx, "cache_quota_per_project", "1100k"); err != nil {
			t.Fatal(err)
		}
		cache := filepath.Join(m.Root, "cache", "omni")
		old := time.Now().Add(-30 * 24 * time.Hour)
		for i, name := range []string{"a", "b", "c"} {
			p := filepath.Join(cache, name)
			if err := os.WriteFile(p, make([]byte, 1<<20), 0o644); err != nil {
				t.Fatal(err)
			}
			at := old.Add(time.Duration(i) * time.Hour)
			if err := os.Chtimes(p, at, at); err != nil {
				t.Fatal(err)
			}
		}
		dry, err := m.Sweep(ctx, sandbox.SweepOptions{Projects: []string{"omni"}, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(dry.Evicted) != 2 || !strings.HasSuffix(dry.Evicted[0].Path, "/a") {
			t.Fatalf("plan: %+v", dry.Evicted)
		}
		if _, err := os.Stat(filepath.Join(cache, "a")); err != nil {
			t.Fatalf("a dry run deleted: %v", err)
		}
		saved, err := m.SavePlan(ctx, dry.Plan, nil)
		if err != nil {
			t.Fatal(err)
		}
		out, err := m.Sweep(ctx, sandbox.SweepOptions{Apply: sandbox.PlanRef{File: saved}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Evicted) != 2 || out.BytesFreed < 2<<20 {
			t.Fatalf("sweep: %+v", out)
		}
		for name, want := range map[string]bool{"a": false, "b": false, "c": true} {
			if _, err := os.Stat(filepath.Join(cache, name)); (err == nil) != want {
				t.Errorf("%s: present %v, want %v", name, err == nil, want)
			}
		}
		if _, err := m.Sweep(ctx, sandbox.SweepOptions{Apply: sandbox.PlanRef{File: saved}}); err == nil {
			t.Error("a plan applied twice")
		}
		if evs := r.Events("storage.evicted"); len(evs) != 4 { // pending then done, per entry
			t.Errorf("storage.evicted events: %d, want 4", len(evs))
		}
		if len(r.Events("storage.swept")) == 0 {
			t.Error("no storage.swept event")
		}
	})
}

// TestEventsCursor: paging the journal with the cursor shows every record
// once, newest first, however many are appended between pages.
func TestEventsCursor(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m, ctx := r.Manager, r.Ctx
		r.Add(1<<20, "p1", "p2", "p3", "p4", "p5")
		want := r.Events("project.added")
		var got []sandbox.Event
		q := sandbox.EventQuery{Type: "project.added", Limit: 2}
		for i := 0; ; i++ {
			page, err := m.Events(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, page.Events...)
			r.Add(1<<20, "late"+string(rune('a'+i))) // appended while paging
			if page.Next == "" {
				break
			}
			q.Cursor = page.Next
		}
		if len(got) != len(want) {
			t.Fatalf("paged %d records, want %d", len(got), len(want))
		}
		for i := range want {
			if got[i].ID != want[i].ID {
				t.Errorf("record %d: id %d, want %d", i, got[i].ID, want[i].ID)
			}
		}
		for _, bad := range []sandbox.EventQuery{{Limit: -1}, {Limit: sandbox.MaxEventLimit + 1}, {Cursor: "garbage"}} {
			if _, err := m.Events(ctx, bad); errkind.Of(err) != errkind.Input {
				t.Errorf("%+v: %v, want input", bad, err)
			}
		}
		page, err := m.Events(ctx, sandbox.EventQuery{Type: "doctor.repaired"})
		if err != nil || page.Events == nil || len(page.Events) != 0 {
			t.Errorf("no match: %v %#v, want an empty, non-nil list", err, page.Events)
		}
		// A filter that can only be a typo is refused, not answered with nothing.
		if _, err := m.Events(ctx, sandbox.EventQuery{Project: "nobody"}); errkind.Of(err) != errkind.NotFound {
			t.Errorf("unknown project: %v, want not found", err)
		}
		if _, err := m.Events(ctx, sandbox.EventQuery{Type: "project.add"}); errkind.Of(err) != errkind.Input {
			t.Errorf("unknown type: %v, want input", err)
		}
		if at, err := sandbox.ParseSince("2020-01-02", time.Now().In(time.UTC)); err != nil || !at.Equal(time.Date(2020, 1, 2, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("since a date: %v %v", at, err)
		}
		if _, err := sandbox.ParseSince("yesterday", time.Now()); errkind.Of(err) != errkind.Input {
			t.Errorf("since yesterday: %v", err)
		}
		if at, err := sandbox.ParseSince("2h", time.Unix(10000, 0)); err != nil || at != time.Unix(10000-7200, 0) {
			t.Errorf("since 2h: %v %v", at, err)
		}
	})
}

// TestOpenRootOrder: the root is checked before the store is opened, and
// only init creates a store.
func TestOpenRootOrder(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope")
	_, err := sandbox.OpenRoot(t.Context(), sandbox.Config{Root: missing, Init: true})
	if errkind.Of(err) != errkind.NotReady || !strings.Contains(errkind.HintOf(err), "create or mount it") {
		t.Errorf("init of a missing root: %v (kind %s, hint %q)", err, errkind.Of(err), errkind.HintOf(err))
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused init made the root: %v", err)
	}
	_, err = sandbox.OpenRoot(t.Context(), sandbox.Config{Root: dir})
	if fix := errkind.FixOf(err); errkind.Of(err) != errkind.NotReady || len(fix.Refs) != 1 ||
		!reflect.DeepEqual(fix.Refs[0], errkind.Do(errkind.OpInit, "", "root", dir)) || strings.Contains(err.Error(), "init") {
		t.Errorf("uninitialised root: %v (hint %q): the hint, an init of the root, goes beside the message", err, errkind.HintOf(err))
	}
	if _, err := os.Stat(filepath.Join(dir, sandbox.StateDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("opening an uninitialised root made %s: %v", sandbox.StateDir, err)
	}
	r := fixture.New(t, "sqlite", filepath.Join(t.TempDir(), "xfsq.db"))
	typo := filepath.Join(dir, "typo", "xfsq.db")
	_, err = sandbox.OpenRoot(t.Context(), sandbox.Config{Root: r.Manager.Root, DSN: typo})
	if errkind.Of(err) != errkind.Input || !strings.Contains(err.Error(), typo) {
		t.Errorf("missing SQLite store: %v (kind %s)", err, errkind.Of(err))
	}
	if _, err := os.Stat(filepath.Dir(typo)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused open made %s: %v", filepath.Dir(typo), err)
	}
	if _, err := sandbox.ParseIDRange("100-200junk"); errkind.Of(err) != errkind.Input {
		t.Errorf("id range: %v", err)
	}
	if rg, err := sandbox.ParseIDRange("100-200"); err != nil || rg.First != 100 || rg.Last != 200 {
		t.Errorf("id range: %v %v", rg, err)
	}
	r.Reopen()
}

// TestSnapshotAndPlanInput: what cmd used to check by hand is the
// library's, as input errors naming the field (not a flag).
func TestSnapshotAndPlanInput(t *testing.T) {
	r := fixture.New(t, "sqlite", filepath.Join(t.TempDir(), "xfsq.db"))
	r.Add(1<<20, "omni")
	for _, o := range []sandbox.SnapshotOptions{
		{Projects: []string{"omni"}, Walk: inventory.Options{Depth: inventory.MaxDepth + 1}},
		{Projects: []string{"omni"}, Walk: inventory.Options{Depth: -1}},
		{Projects: []string{"omni"}, Walk: inventory.Options{TopK: -1}},
	} {
		_, err := r.Manager.Snapshot(r.Ctx, o)
		if errkind.Of(err) != errkind.Input || strings.Contains(err.Error(), "--") {
			t.Errorf("%+v: %v, want an input error naming the field", o.Walk, err)
		}
	}
	snaps, err := r.Manager.Snapshot(r.Ctx, sandbox.SnapshotOptions{Projects: []string{"omni"}, Walk: inventory.Options{Depth: 2, TopK: 3}})
	if err != nil || len(snaps) != len(area.OfProject) {
		t.Fatalf("snapshot: %v %+v", err, snaps)
	}
	if _, err := sandbox.ReadPlanFile(filepath.Join(t.TempDir(), "none.json")); errkind.Of(err) != errkind.Input {
		t.Errorf("a missing plan file: %v", err)
	}
	out, err := r.Manager.Sweep(r.Ctx, sandbox.SweepOptions{Projects: []string{"omni"}, DryRun: true, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := out.Kept.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	plan, err := sandbox.ReadPlanFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Manager.Sweep(r.Ctx, sandbox.SweepOptions{Apply: plan}); err != nil {
		t.Errorf("apply the saved plan: %v", err)
	}
}

// TestEmptyResultsAreLists: on an empty root every list a shell encodes is
// [] in JSON, never null, so that no client special-cases "nothing".
func TestEmptyResultsAreLists(t *testing.T) {
	r := fixture.New(t, "sqlite", filepath.Join(t.TempDir(), "xfsq.db"))
	m, ctx := r.Manager, r.Ctx
	for name, read := range map[string]func() (any, error){
		"list":     func() (any, error) { return m.List(ctx) },
		"report":   func() (any, error) { return m.Report(ctx) },
		"leases":   func() (any, error) { return m.Leases(ctx) },
		"doctor":   func() (any, error) { return m.Doctor(ctx, false) },
		"snapshot": func() (any, error) { return m.Snapshot(ctx, sandbox.SnapshotOptions{Scheduled: true}) },
		"events": func() (any, error) {
			p, err := m.Events(ctx, sandbox.EventQuery{Type: "doctor.repaired"})
			return p.Events, err
		},
	} {
		v, err := read()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, _ := json.Marshal(v)
		if name == "report" || name == "snapshot" {
			// A root without projects still has its inbound tree.
			var rows []struct{ Project, Area string }
			if err := json.Unmarshal(b, &rows); err != nil || len(rows) != 1 || rows[0].Project != sandbox.RootOwner || rows[0].Area != area.Inbound {
				t.Errorf("%s on a root without projects: %s, want the inbound tree alone", name, b)
			}
			continue
		}
		if string(b) != "[]" {
			t.Errorf("%s on an empty root: %s, want []", name, b)
		}
	}
	out, err := m.Sweep(ctx, sandbox.SweepOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(out); strings.Contains(string(b), "null") {
		t.Errorf("sweep of nothing: %s", b)
	}
}
