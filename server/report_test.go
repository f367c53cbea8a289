package server_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/client"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox"
)

// The report over HTTP is xfsq report's core call with the same options:
// the same rows in the same order, the check's verdict, the backend once,
// and a limited reader's report holds its own projects only.
func TestReportOverHTTP(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		ctx := context.Background()
		r.Add(10<<20, "omni", "other")
		// The skeleton's directories alone pass a hard limit of 4 KiB.
		r.Add(4096, "full")
		ts := newServer(t, r)
		reader := ts.client(readerToken)

		o := client.ReportOptions{Over: 50, Sort: apiv1.SortByPercent, Check: true}
		got, err := reader.Report(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		over := 50.0
		want, err := r.Manager.ReportOf(ctx, sandbox.ReportOptions{Over: &over, Sort: sandbox.ReportByPercent, Check: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Trees) == 0 || len(got.Trees) != len(want.Trees) || got.Trees[0].Project != "full" || !got.CheckFailed || !got.AtHardLimit {
			t.Fatalf("report over 50 by percent: %+v, want the CLI's rows %+v", got, want.Trees)
		}
		for i := range got.Trees {
			if got.Trees[i].Project != want.Trees[i].Project || got.Trees[i].Area != want.Trees[i].Area {
				t.Errorf("row %d: %s/%s, the CLI's %s/%s", i, got.Trees[i].Project, got.Trees[i].Area, want.Trees[i].Project, want.Trees[i].Area)
			}
			if got.Trees[i].Backend != (apiv1.Backend{}) {
				t.Errorf("row %d carries the backend %+v: the answer gives it once", i, got.Trees[i].Backend)
			}
		}
		if got.Backend.Kind != want.Backend.Kind || got.Backend.Reason == "" || got.OldestWalkAt == nil {
			t.Errorf("backend %+v, oldest walk %v", got.Backend, got.OldestWalkAt)
		}
		// What the rows promise of the disk is the report's, as the CLI's
		// promised line words it, of the rows answered only.
		var hard uint64
		for _, tr := range got.Trees {
			hard += tr.BytesHard
		}
		if got.Promise == nil || want.Promise == nil || *got.Promise != *want.Promise || got.Promise.PromisedBytes != hard ||
			got.Promise.DiskBytes == 0 || got.ReclaimableBytes != nil {
			t.Errorf("promise %+v (reclaimable %v), want the CLI's %+v with %d bytes promised and nothing planned", got.Promise, got.ReclaimableBytes, want.Promise, hard)
		}
		// Once a plan covered a tree shown, the report says what the policies
		// would free in the trees shown, as the rows' own figures add up.
		if _, err := ts.client(operatorToken).PlanSweep(ctx, "omni"); err != nil {
			t.Fatal(err)
		}
		planned, err := reader.Report(ctx, client.ReportOptions{Projects: []string{"omni"}})
		var reclaim uint64
		covered := false
		for _, tr := range planned.Trees {
			if tr.ReclaimableBytes != nil {
				reclaim, covered = reclaim+*tr.ReclaimableBytes, true
			}
		}
		if err != nil || !covered || planned.ReclaimableBytes == nil || *planned.ReclaimableBytes != reclaim {
			t.Errorf("report after a plan: reclaimable %v of rows %+v, %v; want the rows' %d", planned.ReclaimableBytes, planned.Trees, err, reclaim)
		}

		// A project named that has no tree is an error naming the parameter,
		// and so is one the caller may not see.
		for _, c := range []struct {
			token, project string
		}{{readerToken, "nope"}, {limitedToken, "omni"}} {
			_, err := ts.client(c.token).Report(ctx, client.ReportOptions{Projects: []string{c.project}})
			var p *client.ProblemError
			if !asProblem(err, &p) || p.Status != 400 || !strings.HasPrefix(p.Detail, "project ") {
				t.Errorf("report of %s as %s: %v, want a 400 naming the project parameter", c.project, c.token[:3], err)
			}
		}
		mine, err := ts.client(limitedToken).Report(ctx, client.ReportOptions{})
		if err != nil || len(mine.Trees) != len(area.OfProject) || mine.Trees[0].Project != "other" || mine.CheckFailed {
			t.Errorf("a limited reader's report: %+v %v, want other's trees alone", mine.Trees, err)
		}
		for _, q := range []string{"sort=size", "over=-1", "over=ninety", "area=bogus", "check=2"} {
			if code, _, body := ts.raw(t, "GET", "/v1/workspace/storage/report?"+q, readerToken, ""); code != 400 {
				t.Errorf("report?%s: %d %s, want 400", q, code, body)
			}
		}
		code, _, body := ts.raw(t, "GET", "/v1/workspace/storage/report?project=omni&project=other,full&area=workspace", readerToken, "")
		if code != 200 || strings.Count(body, `"area":"workspace"`) != 3 {
			t.Errorf("projects repeated and comma-separated: %d %s", code, body)
		}
	})
}

func asProblem(err error, p **client.ProblemError) bool {
	return errors.As(err, p)
}

// Settings over HTTP: readers list and get, operators set and reset, each
// change journalled under the token's name as the CLI's is.
func TestSettingsOverHTTP(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		ctx := context.Background()
		ts := newServer(t, r)
		reader, op := ts.client(readerToken), ts.client(operatorToken)
		all, err := reader.Settings(ctx)
		if err != nil || len(all) < 10 {
			t.Fatalf("settings: %d %v", len(all), err)
		}
		ch, err := op.SetSetting(ctx, "scratch_ttl", "2d", false)
		if err != nil || ch.Value != "2d" || ch.Source != "stored" || !strings.HasSuffix(ch.Was, "from default") {
			t.Fatalf("set scratch_ttl 2d: %+v %v", ch, err)
		}
		if v, err := reader.Setting(ctx, "scratch_ttl"); err != nil || v.Value != "2d" || v.Kind != apiv1.SettingDuration {
			t.Errorf("get scratch_ttl: %+v %v", v, err)
		}
		if evs := r.Events(journal.TypeSettingChanged); len(evs) != 1 || evs[0].Actor != "ops" {
			t.Errorf("the change's journal record: %+v", evs)
		}
		// A zero that switches a safety rail off is refused unless meant.
		if _, err := op.SetSetting(ctx, "busy_grace", "0s", false); !isStatus(err, 400) {
			t.Errorf("busy_grace 0s without allow_zero: %v, want 400", err)
		}
		if ch, err := op.SetSetting(ctx, "busy_grace", "0s", true); err != nil || ch.Source != "stored" {
			t.Errorf("busy_grace 0s with allow_zero: %+v %v", ch, err)
		}
		if ch, err := op.SetSetting(ctx, "default_quota", "60GiB", false); err != nil || ch.Env == "" {
			t.Errorf("set default_quota, read from the environment when never stored: %+v %v", ch, err)
		}
		ch, err = op.ResetSetting(ctx, "scratch_ttl")
		if err != nil || ch.Source != "default" || !strings.HasPrefix(ch.Was, "2d") {
			t.Errorf("reset scratch_ttl: %+v %v", ch, err)
		}
		for _, err := range []error{
			func() error { _, err := reader.Setting(ctx, "no_such_key"); return err }(),
			func() error { _, err := op.SetSetting(ctx, "scratch_ttl", "soon", false); return err }(),
			func() error { _, err := op.ResetSetting(ctx, "no_such_key"); return err }(),
		} {
			if !isStatus(err, 400) {
				t.Errorf("a bad key or value: %v, want 400", err)
			}
		}
		if code, _, body := ts.raw(t, "PUT", "/v1/settings/scratch_ttl", operatorToken, `{"value": "`+strings.Repeat("1", 2<<20)+`"}`); code != 413 {
			t.Errorf("a body over the bound: %d %.200s", code, body)
		}
	})
}

func isStatus(err error, status int) bool {
	var p *client.ProblemError
	return asProblem(err, &p) && p.Status == status
}

// Doctor over HTTP finds what xfsq doctor finds, and its fix repairs and
// journals under the token's name.
func TestDoctorOverHTTP(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		ctx := context.Background()
		r.Add(10<<20, "omni")
		ts := newServer(t, r)
		op := ts.client(operatorToken)
		if d, err := op.Doctor(ctx); err != nil || len(d.Findings) != 0 || d.Unresolved {
			t.Fatalf("doctor of a sound root: %+v %v", d, err)
		}
		cache := filepath.Join(r.Manager.Root, area.TreePath("omni", area.Cache))
		if err := os.Remove(cache); err != nil {
			t.Fatal(err)
		}
		d, err := op.Doctor(ctx)
		if err != nil || len(d.Findings) == 0 || !d.Unresolved || d.Findings[0].Fixed {
			t.Fatalf("doctor with omni's cache gone: %+v %v", d, err)
		}
		if _, err := os.Stat(cache); err == nil {
			t.Fatal("GET doctor repaired: it must only read")
		}
		if d, err = op.FixDoctor(ctx); err != nil || d.Unresolved || !d.Findings[0].Fixed {
			t.Fatalf("doctor fix: %+v %v", d, err)
		}
		if _, err := os.Stat(cache); err != nil {
			t.Errorf("doctor fix left the cache missing: %v", err)
		}
		if evs := r.Events(journal.TypeRepaired); len(evs) == 0 || evs[0].Actor != "ops" {
			t.Errorf("the repair's journal record: %+v", evs)
		}
	})
}
