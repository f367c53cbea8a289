package retention

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/sweep"
)

// PlanFormat is the version of the plan files --plan-out writes.
const PlanFormat = 1

// SavedPlan is a sweep plan as --plan-out writes it for review. It carries
// what binds it — the store's id for it, the host, the root and its
// identity, when it was made, a digest of the settings it was made under —
// and the store keeps a hash of the file, so --apply runs a plan only on the
// root, host and settings it was made for, unedited, fresh, once.
type SavedPlan struct {
	Format   int       `json:"xfsq_plan"`
	ID       string    `json:"plan_id"`
	Host     string    `json:"host"`
	Root     string    `json:"root"`
	RootID   string    `json:"root_id"` // device:inode of the root directory
	MadeAt   time.Time `json:"made_at"`
	Settings string    `json:"settings_digest"`
	Areas    []string  `json:"areas"`
	// Projects, when set, are the projects the plan was made for: it is
	// applied to them only (SweepOptions.Exclusive). A plan of --plan-out leaves it
	// empty: it covers the projects its entries name.
	Projects []string   `json:"projects,omitempty"`
	Plan     sweep.Plan `json:"plan"`
}

// replan says what to do about a plan that is refused: a dry run that
// keeps a plan, worded by each shell (the CLI's plan file, the API's id).
var replan = errkind.Fix("make a new one with %s, review it, and apply that", errkind.Do(errkind.OpSweep, "", "dry_run", "", "plan_out", "FILE"))

// planRefused is a saved plan that is well formed but that the state no
// longer lets run (another root, store or project; stale; other settings;
// applied): errkind.Unprocessable, since applying it again can never pass.
// The message says why, the hint how to get one that is not refused.
func planRefused(format string, args ...any) error {
	return planRefusedHint(replan, format, args...)
}

func planRefusedHint(hint errkind.Hint, format string, args ...any) error {
	return errkind.WithFix(errkind.Unprocessable, fmt.Errorf("sweep plan refused: "+format, args...), hint)
}

// planMalformed is input that is not a saved plan at all.
func planMalformed(format string, args ...any) error {
	return errkind.WithFix(errkind.Input, fmt.Errorf("sweep plan refused: "+format, args...), replan)
}

// rootID is the identity of the root directory: a plan is bound to the
// directory, not only to its path.
func (m *Sweeper) rootID() (string, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(m.Root, &st); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino), nil
}

// settingsDigest is a hash of every setting's effective value: a plan made
// under other settings (another busy_grace, other globs) is not the plan
// the operator would review now.
func (m *Sweeper) settingsDigest(ctx context.Context) (string, error) {
	vals, err := m.Settings(ctx)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, v := range vals {
		fmt.Fprintf(h, "%s=%s\n", v.Key, v.Value)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// areasCovered are the areas a sweep of projects covers when it names
// none: a project's own trees, the inbound tree for core.RootOwner, every area
// for a sweep of every project (none named). A plan lists these, not
// areas it never looked at.
func areasCovered(projects []string) []string {
	if len(projects) == 0 {
		return area.SweepOrder
	}
	var out []string
	for _, a := range area.SweepOrder {
		for _, p := range projects {
			if (p == core.RootOwner) == (a == area.Inbound) {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// savePlan makes the file --plan-out writes for plan, a dry run's plan of
// areas (none: all) made of projects (nil: the projects its entries name),
// and records it in the store: its hash, so that only the file unedited
// applies, and its content, so that it applies by its id alone.
func (m *Sweeper) savePlan(ctx context.Context, plan sweep.Plan, areas, projects []string) ([]byte, SavedPlan, error) {
	if len(areas) == 0 {
		areas = areasCovered(projects)
	}
	b := make([]byte, 8)
	rand.Read(b)
	sp := SavedPlan{Format: PlanFormat, ID: "pl-" + hex.EncodeToString(b), Host: m.Store.Host, Root: m.Root,
		MadeAt: m.Now().UTC().Truncate(time.Microsecond), Areas: areas, Projects: projects, Plan: plan}
	var err error
	if sp.RootID, err = m.rootID(); err != nil {
		return nil, sp, err
	}
	if sp.Settings, err = m.settingsDigest(ctx); err != nil {
		return nil, sp, err
	}
	data, err := json.MarshalIndent(sp, "", "  ")
	if err != nil {
		return nil, sp, err
	}
	data = append(data, '\n')
	if err := m.Store.RecordPlan(ctx, sp.ID, digest(data), sp.MadeAt, data); err != nil {
		return nil, sp, err
	}
	return data, sp, nil
}

// checkPlan refuses, as a whole, a saved plan that is not exactly one this
// store made for this host and root, under the settings in force, within
// plan_max_age, and not yet applied; then records it as applied.
func (m *Sweeper) checkPlan(ctx context.Context, data []byte) (SavedPlan, error) {
	var sp SavedPlan
	if err := json.Unmarshal(data, &sp); err != nil || sp.Format == 0 || sp.ID == "" {
		return sp, planMalformed("not a plan saved by a dry run of this xfsq")
	}
	if sp.Format != PlanFormat {
		return sp, planMalformed("plan format %d, this xfsq writes %d", sp.Format, PlanFormat)
	}
	rec, err := m.Store.Plan(ctx, sp.ID)
	if errors.Is(err, store.ErrNotFound) {
		return sp, planRefused("this store never made plan %s for host %q (another host's or root's store, or a made-up plan)", sp.ID, m.Store.Host)
	}
	if err != nil {
		return sp, err
	}
	if digest(data) != rec.Digest {
		return sp, planRefused("plan %s was changed after it was made (its content does not match the hash kept when it was saved)", sp.ID)
	}
	if !rec.AppliedAt.IsZero() {
		return sp, planRefused("plan %s was already applied at %s", sp.ID, rec.AppliedAt.Local().Format(time.DateTime))
	}
	id, err := m.rootID()
	if err != nil {
		return sp, err
	}
	if sp.Host != m.Store.Host || sp.Root != m.Root || sp.RootID != id {
		return sp, planRefused("plan %s was made for root %s (%s) on host %q, not for this root %s (%s) on host %q",
			sp.ID, sp.Root, sp.RootID, sp.Host, m.Root, id, m.Store.Host)
	}
	maxAge, err := m.Setting(ctx, "plan_max_age")
	if err != nil {
		return sp, err
	}
	// The store's clock of when it was made, not the file's: the file is
	// only as trustworthy as the hash says, the row is the store's own.
	if age := m.Now().Sub(rec.CreatedAt); age > maxAge.Duration() {
		return sp, planRefused("plan %s is %s old, older than plan_max_age (%s)", sp.ID, age.Round(time.Second), maxAge.Value)
	}
	settingsNow, err := m.settingsDigest(ctx)
	if err != nil {
		return sp, err
	}
	if sp.Settings != settingsNow {
		return sp, planRefusedHint(errkind.Fix("see what changed with %s", errkind.Do(errkind.OpEvents, "", "type", string(journal.TypeSettingChanged))).Then(replan),
			"plan %s was made under other settings than those in force now", sp.ID)
	}
	if ok, err := m.Store.MarkPlanApplied(ctx, sp.ID, rec.Digest, m.Now()); err != nil || !ok {
		if err == nil {
			err = planRefused("plan %s is being applied or was applied by another process", sp.ID)
		}
		return sp, err
	}
	return sp, nil
}

// planProjects are the projects a saved plan deletes in, sorted.
func planProjects(p sweep.Plan) []string {
	var names []string
	for _, e := range p.Evict {
		if !slices.Contains(names, e.Project) {
			names = append(names, e.Project)
		}
	}
	slices.Sort(names)
	return names
}

// treeOf is the tree, relative to the root, in which a sweep of area may
// delete for project: area.TreePath of a tree the owner has (the root's inbound
// tree is core.RootOwner's alone), else "".
func treeOf(project, a string) string {
	if !area.Known(a) || (a == area.Inbound) != (project == core.RootOwner) {
		return ""
	}
	return area.TreePath(project, a)
}

// rederive keeps the entries of a saved plan that the planner, run now on
// the same projects (fresh), would delete under the same policy, and drops
// every other one with the reason. Nothing the plan does not name is
// deleted, and nothing the planner would not delete now: the planner's own
// checks (trees, uploads/, inbox/, .git, git-tracked, busy_grace, the
// policies, leases) decide each entry again. Entries of projects not in
// names (another sweep holds them) are left out.
// skippedAbove is why the planner passed over p or a directory above it up
// to its tree, or "".
func skippedAbove(why map[string]string, p, tree string) string {
	for ; ; p = path.Dir(p) {
		if r := why[p]; r != "" {
			return r
		}
		if p == tree || p == "." || p == "/" {
			return ""
		}
	}
}

func rederive(saved, fresh sweep.Plan, names []string) sweep.Plan {
	out := sweep.Plan{CacheCap: fresh.CacheCap, CacheBytes: fresh.CacheBytes, Evict: []sweep.Eviction{}, Skipped: []sweep.Skip{}, OverSoft: []sweep.OverSoft{}}
	type key struct{ project, area, path, policy string }
	planned := map[key]sweep.Eviction{}
	for _, e := range fresh.Evict {
		planned[key{e.Project, e.Area, e.Path, e.Policy}] = e
	}
	why := map[string]string{}
	for _, s := range fresh.Skipped {
		why[s.Path] = s.Reason
	}
	leased := map[string]string{}
	for _, s := range fresh.Skipped {
		if s.Path == "projects/"+s.Project && strings.Contains(s.Reason, "leased") {
			leased[s.Project] = s.Reason
		}
	}
	for _, e := range saved.Evict {
		if !slices.Contains(names, e.Project) {
			continue
		}
		drop := func(reason string) {
			out.Skipped = append(out.Skipped, sweep.Skip{Project: e.Project, Path: e.Path, Reason: reason})
		}
		tree := treeOf(e.Project, e.Area)
		clean := path.Clean(e.Path)
		switch {
		case tree == "" || clean != e.Path || !strings.HasPrefix(e.Path, tree+"/"):
			drop(fmt.Sprintf("the plan names it for project %q's %s tree, which it is not in", e.Project, e.Area))
		case leased[e.Project] != "":
			drop("since planning: " + leased[e.Project])
		case skippedAbove(why, e.Path, tree) != "":
			// The entry, or a directory or tree above it, was passed over
			// by the planner just now: that is the reason.
			drop("since planning: " + skippedAbove(why, e.Path, tree))
		default:
			f, ok := planned[key{e.Project, e.Area, e.Path, e.Policy}]
			if !ok {
				drop("since planning: the planner, run now, would not delete it (protected: uploads/, inbox/, .git, git-tracked; no longer due under " + e.Policy + "; or gone)")
				continue
			}
			out.Evict = append(out.Evict, f)
		}
	}
	return out
}
