package readmodel

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/sandbox/internal/coretest"
	"github.com/xfsq/xfsq/sandbox/internal/snapshots"
)

func ptr[T any](v T) *T { return &v }

// The report's filters and orders, on rows made by hand: what each shell
// shows is decided here once.
func TestReportOptionsApply(t *testing.T) {
	rows := []core.TreeStatus{
		{Project: "b", Area: area.Workspace, UsedBytes: 50, BytesHard: 100, Percent: 50, Growth24hBytes: ptr(int64(5))},
		{Project: "a", Area: area.Workspace, UsedBytes: 95, BytesHard: 100, Percent: 95},
		{Project: "a", Area: area.Cache, UsedBytes: 500, Growth24hBytes: ptr(int64(-1))},
		{Project: "c", Area: area.Cache, UsedBytes: 10, BytesHard: 10, Percent: 100, Growth24hBytes: ptr(int64(9))},
	}
	key := func(ts []core.TreeStatus) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Project+"/"+t.Area)
		}
		return out
	}
	cases := []struct {
		name  string
		o     ReportOptions
		want  []string
		field string // of the error, when one is wanted
	}{
		{"all by project", ReportOptions{}, []string{"a/cache", "a/workspace", "b/workspace", "c/cache"}, ""},
		{"over 90 by percent", ReportOptions{Over: ptr(90.0), Sort: ReportByPercent}, []string{"c/cache", "a/workspace"}, ""},
		{"over 0 leaves out a tree without a hard limit", ReportOptions{Over: ptr(0.0)}, []string{"a/workspace", "b/workspace", "c/cache"}, ""},
		{"by used", ReportOptions{Sort: ReportByUsed}, []string{"a/cache", "a/workspace", "b/workspace", "c/cache"}, ""},
		{"by growth, unknown last", ReportOptions{Sort: ReportByGrowth}, []string{"c/cache", "b/workspace", "a/cache", "a/workspace"}, ""},
		{"one project, one area", ReportOptions{Projects: []string{"a"}, Areas: []string{area.Workspace}}, []string{"a/workspace"}, ""},
		{"a project named that has no row", ReportOptions{Projects: []string{"a", "typo"}}, nil, "project"},
		{"a project out of the caller's scope is as absent", ReportOptions{Projects: []string{"a"}, Scope: []string{"b"}}, nil, "project"},
		{"the scope alone", ReportOptions{Scope: []string{"b", "c"}}, []string{"b/workspace", "c/cache"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.o.apply(slices.Clone(rows))
			if c.field != "" {
				if errkind.Of(err) != errkind.Input || errkind.FieldOf(err) != c.field {
					t.Fatalf("err %v (field %q), want bad input in %s", err, errkind.FieldOf(err), c.field)
				}
				return
			}
			if err != nil || !slices.Equal(key(got), c.want) {
				t.Errorf("got %v %v, want %v", key(got), err, c.want)
			}
		})
	}
}

// Bad options are refused before anything is read, naming the field.
func TestCheckReportNamesTheField(t *testing.T) {
	for field, o := range map[string]ReportOptions{
		"area": {Areas: []string{"bogus"}},
		"over": {Over: ptr(-1.0)},
		"sort": {Sort: "size"},
	} {
		err := CheckReport(o)
		var ie *core.InputError
		if !errors.As(err, &ie) || ie.Field() != field {
			t.Errorf("%+v: %v, want bad input in %s", o, err, field)
		}
	}
	if err := CheckReport(ReportOptions{Over: ptr(90.0), Sort: ReportByPercent, Areas: area.All}); err != nil {
		t.Errorf("good options refused: %v", err)
	}
}

// withFullProject is the read model of a root with omni and "full", whose
// workspace is at its hard limit: the skeleton's directories alone pass
// 4 KiB.
func withFullProject(t *testing.T) *Model {
	c, _ := coretest.Omni(t, t.TempDir())
	if err := coretest.Add(context.Background(), c, "full", core.LimitChange{BytesHard: ptr(uint64(4096))}); err != nil {
		t.Fatal(err)
	}
	return New(c, snapshots.New(c).Snapshot)
}

// One call gives the rows and the verdict a monitor reads: a tree at its
// hard limit fails a check of the rows it is among, and only those.
func TestReportOfChecks(t *testing.T) {
	ctx := context.Background()
	m := withFullProject(t)
	res, err := m.ReportOf(ctx, ReportOptions{Check: true, Sort: ReportByPercent})
	if err != nil {
		t.Fatal(err)
	}
	if !res.CheckFailed || !res.AtHardLimit || len(res.Trees) == 0 || res.Trees[0].Project != "full" || res.Backend.Kind == "" {
		t.Errorf("check of every tree: failed %v, first %+v, backend %+v", res.CheckFailed, res.Trees[0], res.Backend)
	}
	if m.IsXFS() == (res.OldestWalkAt != nil) {
		t.Errorf("oldest walk %v on xfs=%v", res.OldestWalkAt, m.IsXFS())
	}
	res, err = m.ReportOf(ctx, ReportOptions{Check: true, Projects: []string{"omni"}})
	if err != nil || res.CheckFailed || res.AtHardLimit || len(res.Trees) != len(area.OfProject) {
		t.Errorf("check of omni alone: %+v %v", res, err)
	}
	if res, err := m.ReportOf(ctx, ReportOptions{Projects: []string{"full"}}); err != nil || !res.AtHardLimit || res.CheckFailed {
		t.Errorf("no check asked: failed %v, at hard %v, %v", res.CheckFailed, res.AtHardLimit, err)
	}
}

// A stale, drifted or escaped figure is a warning of its own, each named
// with its tree.
func TestTreeWarnings(t *testing.T) {
	got := treeWarnings(core.TreeStatus{Project: "p", Area: area.Cache, Stale: true, Drift: "hard 1 MiB, recorded 2 MiB", Escape: "walk 9 MiB, kernel 1 MiB"})
	want := []TreeWarning{{Kind: WarnStale, Project: "p", Area: area.Cache}, {Kind: WarnDrift, Project: "p", Area: area.Cache, Detail: "hard 1 MiB, recorded 2 MiB"},
		{Kind: WarnEscape, Project: "p", Area: area.Cache, Detail: "walk 9 MiB, kernel 1 MiB"}}
	if !slices.Equal(got, want) {
		t.Errorf("warnings %+v, want %+v", got, want)
	}
	if w := treeWarnings(core.TreeStatus{Project: "p", Area: area.Cache}); len(w) != 0 {
		t.Errorf("a sound tree warns: %+v", w)
	}
}

// The promise and what the policies would free are the report's, of the
// rows it answers and only those: no shell sums them again.
func TestReportOfPromise(t *testing.T) {
	m := withFullProject(t)
	res, err := m.ReportOf(context.Background(), ReportOptions{Projects: []string{"full"}})
	if err != nil {
		t.Fatal(err)
	}
	var hard uint64
	unlimited := 0
	for _, tr := range res.Trees {
		hard += tr.BytesHard
		if tr.BytesHard == 0 {
			unlimited++
		}
	}
	p := res.Promise
	if p == nil || p.DiskBytes == 0 || p.PromisedBytes != hard || hard < 4096 || p.UnlimitedTrees != unlimited ||
		p.OvercommitRatio != float64(hard)/float64(p.DiskBytes) {
		t.Errorf("promise of full's trees %+v, want %d bytes promised and %d unlimited of the disk", p, hard, unlimited)
	}
	if res.ReclaimableBytes != nil {
		t.Errorf("reclaimable %d before any plan, want none", *res.ReclaimableBytes)
	}

	rows := []core.TreeStatus{{BytesHard: 100, ReclaimableBytes: ptr(uint64(7))}, {}, {BytesHard: 50, ReclaimableBytes: ptr(uint64(0))}}
	p, reclaim := m.promise(rows)
	if p == nil || p.PromisedBytes != 150 || p.UnlimitedTrees != 1 || reclaim == nil || *reclaim != 7 {
		t.Errorf("promise of hand-made rows %+v, reclaimable %v: want 150 promised, 1 unlimited, 7 reclaimable", p, reclaim)
	}
	if _, reclaim := m.promise(rows[1:2]); reclaim != nil {
		t.Errorf("a row never planned: reclaimable %d, want none", *reclaim)
	}
}
