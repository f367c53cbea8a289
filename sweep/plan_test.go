package sweep

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
)

var (
	now    = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	policy = Policy{CacheMinAge: 7 * 24 * time.Hour, CacheQuotaPerProject: 100, TrashGlobs: []string{"*.tmp", "*.log", ".out/", "dist/", "coverage/"},
		TrashAge: 14 * 24 * time.Hour, BusyGrace: 24 * time.Hour, ScratchTTL: 24 * time.Hour}
)

func ago(d time.Duration) time.Time { return now.Add(-d) }

const day = 24 * time.Hour

func paths(evs []Eviction) []string {
	out := []string{}
	for _, e := range evs {
		out = append(out, e.Path)
	}
	return out
}

func TestPlanRules(t *testing.T) {
	cases := []struct {
		name    string
		project Project
		evict   []string
		skipped map[string]string // path -> reason fragment
	}{
		{
			name: "cache under its cap: nothing goes",
			project: Project{Name: "p", Trees: []Tree{{Area: area.Cache, Bytes: 100, Entries: []Entry{
				{Path: "cache/p/old", Bytes: 60, Newest: ago(30 * day)}}}}},
			evict: []string{},
		},
		{
			name: "cache over its cap: least recently modified first, stopping at the cap",
			project: Project{Name: "p", Trees: []Tree{{Area: area.Cache, Bytes: 180, Entries: []Entry{
				{Path: "cache/p/newer", Bytes: 40, Newest: ago(10 * day)},
				{Path: "cache/p/oldest", Bytes: 50, Newest: ago(40 * day)},
				{Path: "cache/p/old", Bytes: 40, Newest: ago(20 * day)},
				{Path: "cache/p/fresh", Bytes: 50, Newest: ago(time.Hour)}}}}},
			evict: []string{"cache/p/oldest", "cache/p/old"},
		},
		{
			name: "cache: never younger than cache_min_age, never busy",
			project: Project{Name: "p", Trees: []Tree{{Area: area.Cache, Bytes: 500, Entries: []Entry{
				{Path: "cache/p/young", Bytes: 300, Newest: ago(3 * day)},
				{Path: "cache/p/busy", Bytes: 100, Newest: ago(time.Hour)},
				{Path: "cache/p/link", Bytes: 0, Newest: ago(90 * day), Protected: "symlink"},
				{Path: "cache/p/old", Bytes: 100, Newest: ago(30 * day)}}}}},
			evict:   []string{"cache/p/old"},
			skipped: map[string]string{"cache/p/young": "cache_min_age", "cache/p/busy": "busy_grace", "cache/p/link": "symlink"},
		},
		{
			name: "cache ages by last use: an old entry read lately goes after one modified later and never read",
			project: Project{Name: "p", Trees: []Tree{{Area: area.Cache, Bytes: 200, Entries: []Entry{
				{Path: "cache/p/written-long-ago-read-lately", Bytes: 50, Newest: ago(90 * day), LastUsed: ago(10 * day)},
				{Path: "cache/p/written-later-never-read", Bytes: 50, Newest: ago(20 * day)},
				{Path: "cache/p/read-an-hour-ago", Bytes: 50, Newest: ago(80 * day), LastUsed: ago(time.Hour)},
				{Path: "cache/p/older-atime-than-mtime", Bytes: 50, Newest: ago(30 * day), LastUsed: ago(60 * day)}}}}},
			evict:   []string{"cache/p/older-atime-than-mtime", "cache/p/written-later-never-read"},
			skipped: map[string]string{},
		},
		{
			name: "cache: an entry used within cache_min_age stays, however old its data",
			project: Project{Name: "p", Trees: []Tree{{Area: area.Cache, Bytes: 500, Entries: []Entry{
				{Path: "cache/p/in-use", Bytes: 400, Newest: ago(90 * day), LastUsed: ago(2 * day)}}}}},
			evict:   []string{},
			skipped: map[string]string{"cache/p/in-use": "used within cache_min_age"},
		},
		{
			name: "workspace trash: only globs, only old, never protected",
			project: Project{Name: "p", Trees: []Tree{{Area: area.Workspace, Path: "projects/p", Entries: []Entry{
				{Path: "projects/p/build.log", Bytes: 10, Newest: ago(20 * day)},
				{Path: "projects/p/x.tmp", Bytes: 10, Newest: ago(2 * day)},
				{Path: "projects/p/dist", Bytes: 10, Newest: ago(30 * day), Dir: true},
				{Path: "projects/p/dist.log", Bytes: 10, Newest: ago(30 * day), Dir: true},
				{Path: "projects/p/main.go", Bytes: 10, Newest: ago(90 * day)},
				{Path: "projects/p/uploads/a.log", Bytes: 10, Newest: ago(90 * day), Protected: "protected: uploads/"},
				{Path: "projects/p/tracked.log", Bytes: 10, Newest: ago(90 * day), Protected: "git-tracked"},
				{Path: "projects/p/now.log", Bytes: 10, Newest: ago(time.Minute)},
				{Path: "projects/p/dist/untracked.js", Bytes: 10, Newest: ago(30 * day)},
				{Path: "projects/p/src/coverage/x", Bytes: 10, Newest: ago(30 * day)}}}}},
			evict:   []string{"projects/p/build.log", "projects/p/dist", "projects/p/dist/untracked.js", "projects/p/src/coverage/x"},
			skipped: map[string]string{"projects/p/uploads/a.log": "uploads/", "projects/p/tracked.log": "git-tracked", "projects/p/now.log": "busy_grace"},
		},
		{
			name: "a project named like a trash directory is not trash",
			project: Project{Name: "dist", Trees: []Tree{{Area: area.Workspace, Path: "projects/dist", Entries: []Entry{
				{Path: "projects/dist/main.go", Bytes: 10, Newest: ago(90 * day)}}}}},
			evict: []string{},
		},
		{
			name: "scratch: finished runs past their TTL",
			project: Project{Name: "p", Trees: []Tree{{Area: area.Scratch, Entries: []Entry{
				{Path: "scratch/p/r1", Run: "r1", Bytes: 5, Newest: ago(2 * day), Dir: true},
				{Path: "scratch/p/r2", Run: "r2", Bytes: 5, Newest: ago(2 * time.Hour), Dir: true}}}}},
			evict:   []string{"scratch/p/r1"},
			skipped: map[string]string{"scratch/p/r2": "busy_grace"},
		},
		{
			name: "a leased project is skipped whole",
			project: Project{Name: "p", LeasedBy: []string{"run-7"}, Trees: []Tree{{Area: area.Cache, Bytes: 1000, Entries: []Entry{
				{Path: "cache/p/old", Bytes: 1000, Newest: ago(99 * day)}}}}},
			evict:   []string{},
			skipped: map[string]string{"projects/p": "leased by run run-7"},
		},
	}
	for _, c := range cases {
		plan := MakePlan([]Project{c.project}, policy, now)
		if got := paths(plan.Evict); !reflect.DeepEqual(got, c.evict) {
			t.Errorf("%s: evicts %v, want %v", c.name, got, c.evict)
		}
		for p, why := range c.skipped {
			found := false
			for _, s := range plan.Skipped {
				found = found || (s.Path == p && strings.Contains(s.Reason, why))
			}
			if !found {
				t.Errorf("%s: %s not skipped for %q; skipped %+v", c.name, p, why, plan.Skipped)
			}
		}
	}
}

func TestPlanQuotaCheckAndOrder(t *testing.T) {
	plan := MakePlan([]Project{{Name: "p", Trees: []Tree{
		{Area: area.Scratch, Entries: []Entry{{Path: "scratch/p/r", Bytes: 1, Newest: ago(9 * day)}}},
		{Area: area.Workspace, Bytes: 900, Soft: 500, Entries: []Entry{{Path: "projects/p/a.log", Bytes: 1, Newest: ago(99 * day)}}},
		{Area: area.Cache, Bytes: 300, Soft: 400, Entries: []Entry{{Path: "cache/p/x", Bytes: 250, Newest: ago(99 * day)}}},
	}}}, policy, now)
	if len(plan.OverSoft) != 1 || plan.OverSoft[0].Area != area.Workspace {
		t.Errorf("over soft: %+v, want only the workspace", plan.OverSoft)
	}
	var policies []string
	for _, e := range plan.Evict {
		policies = append(policies, e.Policy)
	}
	if fmt.Sprint(policies) != "[cache_quota_per_project workspace_trash scratch_ttl]" {
		t.Errorf("order %v: cache, then workspace trash, then scratch", policies)
	}
}

// Thousands of random trees: nothing protected is ever planned, cache cuts
// stop at the cap, and the plan does not depend on input order.
func TestPlanProperties(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	protections := []string{"", "", "", "symlink", "other filesystem", "git-tracked", "protected: uploads/", "protected: inbox/", "protected: .git/"}
	names := []string{"a.log", "b.tmp", "dist", "coverage", ".out", "src", "main.go", "x.log"}
	for trial := range 3000 {
		var projects []Project
		for pi := range 1 + rng.IntN(4) {
			pr := Project{Name: fmt.Sprintf("p%d", pi)}
			if rng.IntN(5) == 0 {
				pr.LeasedBy = []string{fmt.Sprint("run", rng.IntN(3))}
			}
			for _, a := range []string{area.Cache, area.Workspace, area.Scratch} {
				tr := Tree{Area: a, Path: a + "/" + pr.Name}
				for ei := range rng.IntN(12) {
					name := names[rng.IntN(len(names))]
					e := Entry{Path: fmt.Sprintf("%s/%s/%d-%s", a, pr.Name, ei, name), Bytes: uint64(rng.IntN(100)),
						Newest: ago(time.Duration(rng.IntN(60*24)) * time.Hour), Dir: rng.IntN(2) == 0,
						Protected: protections[rng.IntN(len(protections))], Run: fmt.Sprint("r", ei)}
					tr.Entries = append(tr.Entries, e)
					tr.Bytes += e.Bytes
				}
				pr.Trees = append(pr.Trees, tr)
			}
			projects = append(projects, pr)
		}
		plan := MakePlan(projects, policy, now)
		leased := map[string]bool{}
		for _, pr := range projects {
			leased[pr.Name] = len(pr.LeasedBy) > 0
		}
		byPath := map[string]Entry{}
		for _, pr := range projects {
			for _, tr := range pr.Trees {
				for _, e := range tr.Entries {
					byPath[e.Path] = e
				}
			}
		}
		cacheLeft := map[string]uint64{}
		for _, pr := range projects {
			for _, tr := range pr.Trees {
				if tr.Area == area.Cache {
					cacheLeft[pr.Name] = tr.Bytes
				}
			}
		}
		for _, ev := range plan.Evict {
			e := byPath[ev.Path]
			switch {
			case e.Protected != "":
				t.Fatalf("trial %d: protected %s (%s) planned", trial, e.Path, e.Protected)
			case leased[ev.Project]:
				t.Fatalf("trial %d: %s of leased project %s planned", trial, e.Path, ev.Project)
			case e.Newest.After(now.Add(-policy.BusyGrace)):
				t.Fatalf("trial %d: busy %s planned", trial, e.Path)
			case ev.Area == area.Cache && e.Newest.After(now.Add(-policy.CacheMinAge)):
				t.Fatalf("trial %d: cache entry younger than cache_min_age planned: %s", trial, e.Path)
			case ev.Area == area.Workspace && MatchGlob(policy.TrashGlobs, strings.TrimPrefix(e.Path, "workspace/"+ev.Project+"/"), e.Dir) == "":
				t.Fatalf("trial %d: non-trash %s planned", trial, e.Path)
			}
			if ev.Area == area.Cache {
				if cacheLeft[ev.Project] <= policy.CacheQuotaPerProject {
					t.Fatalf("trial %d: %s planned although the cache was already under its cap", trial, ev.Path)
				}
				cacheLeft[ev.Project] -= min(cacheLeft[ev.Project], e.Bytes)
			}
		}
		// Shuffled input, same plan.
		shuffled := append([]Project(nil), projects...)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for i := range shuffled {
			trees := append([]Tree(nil), shuffled[i].Trees...)
			for j := range trees {
				es := append([]Entry(nil), trees[j].Entries...)
				rng.Shuffle(len(es), func(a, b int) { es[a], es[b] = es[b], es[a] })
				trees[j].Entries = es
			}
			rng.Shuffle(len(trees), func(a, b int) { trees[a], trees[b] = trees[b], trees[a] })
			shuffled[i].Trees = trees
		}
		if again := MakePlan(shuffled, policy, now); !reflect.DeepEqual(again, plan) {
			t.Fatalf("trial %d: the plan depends on input order", trial)
		}
	}
}

func FuzzMatchGlob(f *testing.F) {
	f.Add("a.log", false)
	f.Add("dist", true)
	f.Fuzz(func(t *testing.T, name string, dir bool) {
		g := MatchGlob(policy.TrashGlobs, name, dir)
		if g != "" && !strings.HasSuffix(g, "/") && dir {
			t.Fatalf("directory %q matched the file glob %q", name, g)
		}
		if strings.HasSuffix(g, "/") && !dir && !strings.Contains(name, "/") {
			t.Fatalf("file %q with no directory above it matched %q", name, g)
		}
	})
}

// The inbound tree is swept by inbound_ttl alone: each top-level entry
// whose newest mtime is at least inbound_ttl old goes, anything younger
// stays (not worth a line unless busy_grace holds it), and what the walk
// protected never goes, however old.
func TestPlanInbound(t *testing.T) {
	p := policy
	p.InboundTTL = 3 * day // longer than busy_grace (1 day): the TTL decides, not the grace
	cases := []struct {
		name    string
		entry   Entry
		planned bool
		skipped string // reason fragment, "" for not skipped
	}{
		{"an old staged file", Entry{Path: "inbound/old.bin", Bytes: 10, Newest: ago(5 * day)}, true, ""},
		{"an old staged directory (its newest mtime inside)", Entry{Path: "inbound/chan1", Bytes: 10, Newest: ago(4 * day), Dir: true}, true, ""},
		{"exactly inbound_ttl old", Entry{Path: "inbound/edge", Bytes: 10, Newest: ago(3 * day)}, true, ""},
		{"a nanosecond younger than inbound_ttl", Entry{Path: "inbound/edge-young", Bytes: 10, Newest: ago(3*day - time.Nanosecond)}, false, ""},
		{"younger than inbound_ttl, past busy_grace", Entry{Path: "inbound/fresh", Bytes: 10, Newest: ago(2 * day)}, false, ""},
		{"within busy_grace", Entry{Path: "inbound/busy", Bytes: 10, Newest: ago(time.Hour)}, false, "busy_grace"},
		{"an old symlink", Entry{Path: "inbound/link", Newest: ago(90 * day), Protected: "symlink"}, false, "symlink"},
		{"an old mount point", Entry{Path: "inbound/mnt", Newest: ago(90 * day), Dir: true, Protected: "other filesystem"}, false, "other filesystem"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan := MakePlan([]Project{{Name: "_root", Trees: []Tree{{Area: area.Inbound, Path: "inbound", Bytes: 10, Entries: []Entry{c.entry}}}}}, p, now)
			switch {
			case c.planned && (len(plan.Evict) != 1 || plan.Evict[0] != Eviction{Project: "_root", Area: area.Inbound, Path: c.entry.Path, Bytes: 10,
				Newest: c.entry.Newest, Reason: plan.Evict[0].Reason, Policy: PolicyInbound} || !strings.Contains(plan.Evict[0].Reason, "inbound_ttl")):
				t.Errorf("planned %+v, want %s alone, policy inbound_ttl", plan.Evict, c.entry.Path)
			case !c.planned && len(plan.Evict) != 0:
				t.Errorf("planned %+v, want nothing", plan.Evict)
			}
			var why string
			for _, s := range plan.Skipped {
				if s.Path == c.entry.Path {
					why = s.Reason
				}
			}
			if (c.skipped == "") != (why == "") || !strings.Contains(why, c.skipped) {
				t.Errorf("skipped for %q, want %q", why, c.skipped)
			}
		})
	}
}

// A plan saved (--plan-out, or kept in the store for the API) names each
// entry exactly: a tenant's name that is not UTF-8 must not come back as
// another name (encoding/json turns its bytes into U+FFFD, the name of a
// different entry the tenant can make), or applying the reviewed plan
// deletes what it never listed and keeps what it did.
func TestEvictionPathSurvivesJSON(t *testing.T) {
	for _, p := range []string{"inbound/plain", "inbound/bad\xff\xfeutf8", "inbound/bad\uFFFD\uFFFDutf8", "cache/a/caf\xe9/x", "inbound/nl\nq\"b\\"} {
		b, err := json.Marshal(Plan{Evict: []Eviction{{Project: "_root", Area: area.Inbound, Path: p, Policy: PolicyInbound}}})
		if err != nil {
			t.Fatal(err)
		}
		var back Plan
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if len(back.Evict) != 1 || back.Evict[0].Path != p {
			t.Errorf("%q came back as %+v (from %s)", p, back.Evict, b)
		}
	}
}
