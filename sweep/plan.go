// Package sweep keeps sandbox storage clean by explicit policy. Plan is a
// pure function of (what the walks found, the policy, the leases, now) and
// decides what may go; Execute deletes exactly that, inside the root,
// re-checking each entry just before it goes and journalling it before and
// after. What git tracks it asks internal/gitindex, when walking and again
// before each workspace entry goes; each deletion is internal/deletion's.
//
// It must never delete anything protected (uploads/, inbox/, .git/,
// git-tracked files, anything modified within busy_grace, anything of a
// leased project), anything reached through a symlink or on another
// filesystem, or anything outside the sandbox root.
package sweep

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/units"
)

// Policy is the retention settings (see package settings).
type Policy struct {
	CacheMinAge          time.Duration
	CacheQuotaPerProject uint64
	TrashGlobs           []string // "*.log" matches file names, "dist/" directory names
	TrashAge             time.Duration
	BusyGrace            time.Duration
	ScratchTTL           time.Duration
	InboundTTL           time.Duration
}

// Policies, as journalled and counted.
const (
	PolicyCache   = "cache_quota_per_project"
	PolicyTrash   = "workspace_trash"
	PolicyScratch = "scratch_ttl"
	PolicyInbound = "inbound_ttl"
)

// Entry is a candidate the walks found: a top-level cache entry, a
// workspace entry whose name matches a trash glob, a scratch run, or a
// top-level entry of inbound/.
type Entry struct {
	Path   string    `json:"path"` // relative to the sandbox root
	Bytes  uint64    `json:"bytes"`
	Newest time.Time `json:"newest"` // newest mtime, inside it for a directory
	// LastUsed is the newest use, inside it for a directory: the newest of
	// mtime and of files' atime (inventory.LastUse). Caches age by it, as
	// BuildKit's GC does; zero: not known, Newest stands for it.
	LastUsed time.Time `json:"last_used,omitzero"`
	Dir      bool      `json:"dir,omitempty"`
	// Why it must never go, if it must not: "symlink", "other filesystem",
	// "protected: uploads/", "git-tracked" … (set by the walks).
	Protected string `json:"protected,omitempty"`
	Run       string `json:"run,omitempty"` // scratch: the run it belongs to
}

// Tree is one (project, area) as the walks found it.
type Tree struct {
	Area    string
	Path    string // relative to the root
	Bytes   uint64 // the whole tree
	Soft    uint64 // the tree's soft byte limit (0: none), for the quota check
	Entries []Entry
	// Skipped is what the walk found it must leave whatever the policy,
	// and says so in the plan: a repository whose index cannot be read, a
	// tree that could not be walked at all.
	Skipped []Skip
}

// Project is one project's trees and leases.
type Project struct {
	Name string
	// LeasedBy names the runs holding unexpired leases; any makes the
	// whole project untouchable.
	LeasedBy []string
	Trees    []Tree
}

// Eviction is one planned deletion.
type Eviction struct {
	Project string    `json:"project"`
	Area    string    `json:"area"`
	Path    string    `json:"path"`
	Bytes   uint64    `json:"bytes"`
	Newest  time.Time `json:"newest"`
	// LastUsed, for a cache entry: its last use when planned (Entry.LastUse).
	LastUsed time.Time `json:"last_used,omitzero"`
	Reason   string    `json:"reason"`
	Policy   string    `json:"policy"`
}

// evictionFields is Eviction without its JSON methods.
type evictionFields Eviction

// MarshalJSON saves Path exactly: a name need not be UTF-8 (a tenant
// chooses it), and encoding/json would turn its bytes into U+FFFD, which
// names another entry: a plan applied (--apply, or by id over the API)
// must delete what was reviewed, never a look-alike. Such a path is saved
// twice: "path" to read, "path_bytes" (base64) to apply.
func (e Eviction) MarshalJSON() ([]byte, error) {
	w := struct {
		evictionFields
		PathBytes []byte `json:"path_bytes,omitempty"`
	}{evictionFields: evictionFields(e)}
	if !utf8.ValidString(e.Path) {
		w.PathBytes = []byte(e.Path)
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON saved: path_bytes, when there, is
// the path.
func (e *Eviction) UnmarshalJSON(b []byte) error {
	var w struct {
		evictionFields
		PathBytes []byte `json:"path_bytes"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = Eviction(w.evictionFields)
	if w.PathBytes != nil {
		e.Path = string(w.PathBytes)
	}
	return nil
}

// Skip is a candidate left alone, and why.
type Skip struct {
	Project string `json:"project,omitempty"`
	Path    string `json:"path"`
	Reason  string `json:"reason"`
}

// OverSoft is a tree over its soft limit, found by the quota check.
type OverSoft struct {
	Project string `json:"project"`
	Area    string `json:"area"`
	Bytes   uint64 `json:"used_bytes"`
	Soft    uint64 `json:"bytes_soft"`
}

// Plan is what a sweep will do.
type Plan struct {
	OverSoft []OverSoft `json:"over_soft"`
	Evict    []Eviction `json:"evicted"`
	Skipped  []Skip     `json:"skipped"`
	// CacheCap is the cap each project's cache is cut to, for the executor
	// to stop a cut as soon as it is met.
	CacheCap uint64 `json:"cache_cap"`
	// CacheBytes is each project's cache size when planned.
	CacheBytes map[string]uint64 `json:"cache_bytes,omitempty"`
}

// MakePlan decides what may go. It does no I/O; the same input always
// gives the same plan.
func MakePlan(projects []Project, p Policy, now time.Time) Plan {
	plan := Plan{OverSoft: []OverSoft{}, Evict: []Eviction{}, Skipped: []Skip{}, CacheCap: p.CacheQuotaPerProject, CacheBytes: map[string]uint64{}}
	projects = append([]Project(nil), projects...)
	sort.Slice(projects, func(i, j int) bool { return projects[i].Name < projects[j].Name })
	for _, pr := range projects {
		if len(pr.LeasedBy) > 0 {
			runs := append([]string(nil), pr.LeasedBy...)
			sort.Strings(runs)
			plan.Skipped = append(plan.Skipped, Skip{Project: pr.Name, Path: "projects/" + pr.Name,
				Reason: "the project is leased by run " + strings.Join(runs, ", ")})
			continue
		}
		trees := append([]Tree(nil), pr.Trees...)
		sort.Slice(trees, func(i, j int) bool {
			return slices.Index(area.SweepOrder, trees[i].Area) < slices.Index(area.SweepOrder, trees[j].Area)
		})
		for _, t := range trees { // the quota check comes first
			if t.Soft > 0 && t.Bytes > t.Soft {
				plan.OverSoft = append(plan.OverSoft, OverSoft{pr.Name, t.Area, t.Bytes, t.Soft})
			}
		}
		for _, t := range trees {
			for _, s := range t.Skipped {
				plan.Skipped = append(plan.Skipped, Skip{Project: pr.Name, Path: s.Path, Reason: s.Reason})
			}
			switch t.Area {
			case area.Cache:
				plan.CacheBytes[pr.Name] = t.Bytes
				planCache(&plan, pr.Name, t, p, now)
			case area.Workspace:
				planTrash(&plan, pr.Name, t, p, now)
			case area.Scratch:
				planScratch(&plan, pr.Name, t, p, now)
			case area.Inbound:
				planInbound(&plan, pr.Name, t, p, now)
			}
		}
	}
	return plan
}

// untouchable is why an entry must stay whatever the policy, or "".
func untouchable(e Entry, p Policy, now time.Time) string {
	switch {
	case e.Protected != "":
		return e.Protected
	case e.Newest.After(now.Add(-p.BusyGrace)):
		return "modified within busy_grace (" + units.FormatDuration(p.BusyGrace) + ")"
	}
	return ""
}

func sortedEntries(t Tree, less func(a, b Entry) bool) []Entry {
	es := append([]Entry(nil), t.Entries...)
	sort.Slice(es, func(i, j int) bool {
		if less != nil && less(es[i], es[j]) != less(es[j], es[i]) {
			return less(es[i], es[j])
		}
		return es[i].Path < es[j].Path
	})
	return es
}

// LastUse is when an entry was last used: LastUsed, or Newest where the
// walk did not say (never earlier than Newest).
func (e Entry) LastUse() time.Time {
	if e.LastUsed.After(e.Newest) {
		return e.LastUsed
	}
	return e.Newest
}

// planCache drops the least recently used top-level cache entries (by
// LastUse: a cache read a moment ago is not the oldest, however long ago
// it was written) until the cache is under its cap, never one used within
// cache_min_age.
func planCache(plan *Plan, project string, t Tree, p Policy, now time.Time) {
	total := t.Bytes
	if p.CacheQuotaPerProject == 0 || total <= p.CacheQuotaPerProject {
		return
	}
	lru := sortedEntries(t, func(a, b Entry) bool { return a.LastUse().Before(b.LastUse()) })
	for _, e := range lru {
		if total <= p.CacheQuotaPerProject {
			break
		}
		if why := untouchable(e, p, now); why != "" {
			plan.Skipped = append(plan.Skipped, Skip{project, e.Path, why})
			continue
		}
		if e.LastUse().After(now.Add(-p.CacheMinAge)) {
			plan.Skipped = append(plan.Skipped, Skip{project, e.Path, "used within cache_min_age (" + units.FormatDuration(p.CacheMinAge) + ")"})
			continue
		}
		plan.Evict = append(plan.Evict, Eviction{Project: project, Area: area.Cache, Path: e.Path, Bytes: e.Bytes, Newest: e.Newest, LastUsed: e.LastUse(),
			Reason: fmt.Sprintf("cache over its %s cap: least recently used", units.FormatIEC(p.CacheQuotaPerProject)), Policy: PolicyCache})
		total -= min(total, e.Bytes)
	}
}

// MatchGlob reports which trash glob, if any, makes an entry trash. rel is
// the entry's path inside its tree (never the tree's own path: a project
// named "dist" is not trash). File globs ("*.log") match a file's name;
// directory globs ("dist/") match a directory or any directory above the
// entry inside the tree.
func MatchGlob(globs []string, rel string, dir bool) string {
	parts := strings.Split(rel, "/")
	dirs := parts
	if !dir {
		dirs = parts[:len(parts)-1]
	}
	for _, g := range globs {
		if pattern, isDir := strings.CutSuffix(g, "/"); isDir {
			for _, d := range dirs {
				if ok, _ := path.Match(pattern, d); ok {
					return g
				}
			}
		} else if !dir {
			if ok, _ := path.Match(g, parts[len(parts)-1]); ok {
				return g
			}
		}
	}
	return ""
}

func planTrash(plan *Plan, project string, t Tree, p Policy, now time.Time) {
	for _, e := range sortedEntries(t, nil) {
		g := MatchGlob(p.TrashGlobs, strings.TrimPrefix(e.Path, t.Path+"/"), e.Dir)
		if g == "" {
			continue // not trash: the walk offered it by mistake, leave it
		}
		if why := untouchable(e, p, now); why != "" {
			plan.Skipped = append(plan.Skipped, Skip{project, e.Path, why})
			continue
		}
		if e.Newest.After(now.Add(-p.TrashAge)) {
			continue // trash, but not old enough: not worth a line
		}
		plan.Evict = append(plan.Evict, Eviction{Project: project, Area: area.Workspace, Path: e.Path, Bytes: e.Bytes, Newest: e.Newest,
			Reason: fmt.Sprintf("workspace trash (%s) older than %s", g, units.FormatDuration(p.TrashAge)), Policy: PolicyTrash})
	}
}

func planScratch(plan *Plan, project string, t Tree, p Policy, now time.Time) {
	planTTL(plan, project, t, p, now, p.ScratchTTL, PolicyScratch, func(e Entry) string {
		return fmt.Sprintf("scratch of finished run %s older than %s", e.Run, units.FormatDuration(p.ScratchTTL))
	})
}

// planInbound removes what a channel staged and never processed: each
// top-level entry of inbound/ whose newest mtime (inside it, for a
// directory) is inbound_ttl old. What the walk protected (a symlink,
// another filesystem) and what busy_grace holds stay, as everywhere.
func planInbound(plan *Plan, owner string, t Tree, p Policy, now time.Time) {
	planTTL(plan, owner, t, p, now, p.InboundTTL, PolicyInbound, func(Entry) string {
		return fmt.Sprintf("inbound staging older than %s (inbound_ttl), left unprocessed", units.FormatDuration(p.InboundTTL))
	})
}

// planTTL plans each top-level entry of t at least ttl old (by its newest
// mtime) that nothing makes untouchable.
func planTTL(plan *Plan, owner string, t Tree, p Policy, now time.Time, ttl time.Duration, policy string, reason func(Entry) string) {
	for _, e := range sortedEntries(t, nil) {
		if why := untouchable(e, p, now); why != "" {
			plan.Skipped = append(plan.Skipped, Skip{owner, e.Path, why})
			continue
		}
		if e.Newest.After(now.Add(-ttl)) {
			continue
		}
		plan.Evict = append(plan.Evict, Eviction{Project: owner, Area: t.Area, Path: e.Path, Bytes: e.Bytes, Newest: e.Newest,
			Reason: reason(e), Policy: policy})
	}
}
