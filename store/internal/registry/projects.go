package registry

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store/internal/base"
)

// Project states. A project is usable only when ready; adding and removing
// rows left by a killed process are what doctor --fix resolves.
const (
	StateAdding   = "adding"
	StateReady    = "ready"
	StateRemoving = "removing"
)

// RootOwner is the owner row of the root's own trees (the inbound tree,
// <root>/inbound): trees are keyed by (host, project, area) with a foreign
// key to projects, so a tree that belongs to no tenant hangs off a row of
// its own. Its name lies outside the project name rule (a leading '_'), so
// no tenant project can ever take or alias it; Projects never lists it, so
// no loop over tenant projects (lists, overview, sweeps, removal) sees it,
// while Trees lists its tree beside the tenants' (report, metrics,
// snapshots, doctor, export).
const RootOwner = "_root"

// Project is one registered sandbox project on this host.
type Project struct {
	Name      string    `json:"project"`
	State     string    `json:"state"`
	CreatedAt time.Time `json:"created_at"`
	// Adder names the operation adding or removing the project, as
	// project.HolderOf does (pid.start@host/op-N); "" when neither is under way.
	Adder string `json:"-"`
}

// Tree is one (project, area) directory tree with its project ID and limits.
type Tree struct {
	Project    string          `json:"project"`
	Area       string          `json:"area"`
	Path       string          `json:"path"` // relative to the sandbox root
	Backend    string          `json:"backend"`
	FSUUID     string          `json:"fs_uuid,omitempty"`
	ProjectID  quota.ProjectID `json:"project_id"`
	Limits     quota.Limits    `json:"limits"`
	CreatedDir bool            `json:"-"`
}

type ProjectRow struct {
	Name      string `db:"name"`
	State     string `db:"state"`
	CreatedAt int64  `db:"created_at"`
	Adder     string `db:"adder"`
}

func (r ProjectRow) ToProject() Project {
	return Project{Name: r.Name, State: r.State, CreatedAt: base.FromMicros(r.CreatedAt), Adder: r.Adder}
}

type TreeRow struct {
	Project    string `db:"project"`
	Area       string `db:"area"`
	Path       string `db:"path"`
	Backend    string `db:"backend"`
	FSUUID     string `db:"fs_uuid"`
	ProjectID  int64  `db:"project_id"`
	BytesSoft  int64  `db:"bytes_soft"`
	BytesHard  int64  `db:"bytes_hard"`
	InodesSoft int64  `db:"inodes_soft"`
	InodesHard int64  `db:"inodes_hard"`
	CreatedDir bool   `db:"created_dir"`
}

func (r TreeRow) ToTree() Tree {
	return Tree{Project: r.Project, Area: r.Area, Path: r.Path, Backend: r.Backend, FSUUID: r.FSUUID,
		ProjectID: quota.ProjectID(r.ProjectID), CreatedDir: r.CreatedDir,
		Limits: quota.Limits{BytesSoft: uint64(r.BytesSoft), BytesHard: uint64(r.BytesHard),
			InodesSoft: uint64(r.InodesSoft), InodesHard: uint64(r.InodesHard)}}
}

const TreeCols = `project, area, path, backend, fs_uuid, project_id, bytes_soft, bytes_hard, inodes_soft, inodes_hard, created_dir`

// InsertProject registers name in state adding, held by adder. It returns
// the existing row and false when the name is taken.
func (t *Tx) InsertProject(ctx context.Context, name, adder string, now time.Time) (existing Project, inserted bool, err error) {
	if err := t.Lock(ctx, ProjectLock(t.s.Host, name)); err != nil {
		return Project{}, false, err
	}
	var row ProjectRow
	err = t.Get(ctx, &row, `SELECT name, state, created_at, adder FROM projects WHERE host = ? AND name = ?`, t.s.Host, name)
	if err == nil {
		return row.ToProject(), false, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return Project{}, false, err
	}
	if err := t.Hold(ctx, adder); err != nil {
		return Project{}, false, err
	}
	_, err = t.Exec(ctx, `INSERT INTO projects (host, name, state, created_at, adder) VALUES (?, ?, ?, ?, ?)`,
		t.s.Host, name, StateAdding, base.ToMicros(now), adder)
	return Project{}, err == nil, err
}

// EnsureRootOwner records the RootOwner row (ready) unless it exists.
func (t *Tx) EnsureRootOwner(ctx context.Context, now time.Time) error {
	if err := t.Lock(ctx, ProjectLock(t.s.Host, RootOwner)); err != nil {
		return err
	}
	var n int
	if err := t.Get(ctx, &n, `SELECT COUNT(*) FROM projects WHERE host = ? AND name = ?`, t.s.Host, RootOwner); err != nil || n > 0 {
		return err
	}
	_, err := t.Exec(ctx, `INSERT INTO projects (host, name, state, created_at, adder) VALUES (?, ?, ?, ?, '')`,
		t.s.Host, RootOwner, StateReady, base.ToMicros(now))
	return err
}

// SetProjectState moves a project to state, held by adder ("" when done).
func (t *Tx) SetProjectState(ctx context.Context, name, state, adder string) error {
	if err := t.Hold(ctx, adder); err != nil {
		return err
	}
	res, err := t.Exec(ctx, `UPDATE projects SET state = ?, adder = ? WHERE host = ? AND name = ?`, state, adder, t.s.Host, name)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("project %q: %w", name, base.ErrNotFound)
	}
	return nil
}

// DeleteProject removes the project row and its trees, and ends its
// leases: a lease left behind would shield a later project of the same name.
//
// Both deletions take the admission lock first, as a write does: a write
// locks its reservation's row and then its tree's (the ledger sum), and a
// deletion taking the tree's row first and the reservation's next would
// close a cycle that PostgreSQL breaks by aborting one of the two.
func (t *Tx) DeleteProject(ctx context.Context, name string) error {
	if err := t.AdmissionLock(ctx); err != nil {
		return err
	}
	for _, table := range []string{"trees", "ledger", "reservations", "snapshots", "snapshot_trees", "snapshot_history", "limit_crossings", "reclaimable", "sweep_locks", "leases"} {
		if _, err := t.Exec(ctx, `DELETE FROM `+table+` WHERE host = ? AND project = ?`, t.s.Host, name); err != nil {
			return err
		}
	}
	_, err := t.Exec(ctx, `DELETE FROM projects WHERE host = ? AND name = ?`, t.s.Host, name)
	return err
}

// DeleteTree removes one tree of a project and what is kept about it
// (its ledger, reservations and snapshots): the undoing of an InsertTree
// whose tree could not be made.
func (t *Tx) DeleteTree(ctx context.Context, project, area string) error {
	if err := t.AdmissionLock(ctx); err != nil {
		return err
	}
	for _, table := range []string{"trees", "ledger", "reservations", "snapshots", "snapshot_trees", "snapshot_history", "limit_crossings", "reclaimable"} {
		if _, err := t.Exec(ctx, `DELETE FROM `+table+` WHERE host = ? AND project = ? AND area = ?`, t.s.Host, project, area); err != nil {
			return err
		}
	}
	return nil
}

// InsertTree records a tree of a project, with an empty ledger: a row
// left under its key (a credit that committed after an earlier tree of
// that name was removed) would otherwise count in its usage, and its
// later drop by a walk would take it out of a sum it was never in.
func (t *Tx) InsertTree(ctx context.Context, tr Tree) error {
	return t.InsertTrees(ctx, []Tree{tr})
}

// InsertTrees is InsertTree for each of trees, in two statements.
func (t *Tx) InsertTrees(ctx context.Context, trees []Tree) error {
	if len(trees) == 0 {
		return nil
	}
	keys := make([]base.TreeKey, len(trees))
	for i, tr := range trees {
		keys[i] = base.TreeKey{Project: tr.Project, Area: tr.Area}
	}
	var args []any
	q := base.TreesCTE(keys, &args) + `DELETE FROM ledger WHERE host = ?
		AND EXISTS (SELECT 1 FROM v WHERE v.project = ledger.project AND v.area = ledger.area)`
	if _, err := t.Exec(ctx, q, append(args, t.s.Host)...); err != nil {
		return err
	}
	args = args[:0]
	for _, tr := range trees {
		args = append(args, t.s.Host, tr.Project, tr.Area, tr.Path, tr.Backend, tr.FSUUID, int64(tr.ProjectID),
			int64(tr.Limits.BytesSoft), int64(tr.Limits.BytesHard), int64(tr.Limits.InodesSoft), int64(tr.Limits.InodesHard), tr.CreatedDir)
	}
	_, err := t.Exec(ctx, `INSERT INTO trees (host, `+TreeCols+`) VALUES `+base.Placeholders(len(trees), "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"), args...)
	return err
}

// Project reads one project.
func (s *Store) Project(ctx context.Context, name string) (Project, error) {
	return ReadProject(ctx, s.Get, s.Host, name)
}

// Project reads one project in the transaction.
func (t *Tx) Project(ctx context.Context, name string) (Project, error) {
	return ReadProject(ctx, t.Get, t.s.Host, name)
}

func ReadProject(ctx context.Context, get func(context.Context, any, string, ...any) error, host, name string) (Project, error) {
	var row ProjectRow
	err := get(ctx, &row, `SELECT name, state, created_at, adder FROM projects WHERE host = ? AND name = ?`, host, name)
	if errors.Is(err, sql.ErrNoRows) {
		return Project{}, fmt.Errorf("project %q: %w", name, base.ErrNotFound)
	}
	return row.ToProject(), err
}

// Projects lists this host's tenant projects by name (never RootOwner).
func (s *Store) Projects(ctx context.Context) ([]Project, error) {
	var rows []ProjectRow
	if err := s.Sel(ctx, &rows, `SELECT name, state, created_at, adder FROM projects WHERE host = ? AND name <> ? ORDER BY name`, s.Host, RootOwner); err != nil {
		return nil, err
	}
	out := make([]Project, len(rows))
	for i, r := range rows {
		out[i] = r.ToProject()
	}
	return out, nil
}

// Trees lists the trees of one project (RootOwner: the root's own), or of
// all, the root's own included, when project is "".
func (s *Store) Trees(ctx context.Context, project string) ([]Tree, error) {
	return ReadTrees(ctx, s.Sel, s.Host, project)
}

func ReadTrees(ctx context.Context, sel func(context.Context, any, string, ...any) error, host, project string) ([]Tree, error) {
	var rows []TreeRow
	q := `SELECT ` + TreeCols + ` FROM trees WHERE host = ?`
	args := []any{host}
	if project != "" {
		q += ` AND project = ?`
		args = append(args, project)
	}
	if err := sel(ctx, &rows, q+` ORDER BY project, area`, args...); err != nil {
		return nil, err
	}
	out := make([]Tree, len(rows))
	for i, r := range rows {
		out[i] = r.ToTree()
	}
	return out, nil
}

// TreeByID is the tree of this host recorded with project ID id; ok is
// false when none is. One indexed-by-nothing scan inside the database, not
// every row through Go: the fallback backend asks it at every add.
func (s *Store) TreeByID(ctx context.Context, id quota.ProjectID) (t Tree, ok bool, err error) {
	var rows []TreeRow
	if err := s.Sel(ctx, &rows, `SELECT `+TreeCols+` FROM trees WHERE host = ? AND project_id = ? ORDER BY project DESC, area DESC LIMIT 1`, s.Host, id); err != nil {
		return Tree{}, false, err
	}
	if len(rows) == 0 {
		return Tree{}, false, nil
	}
	return rows[0].ToTree(), true, nil
}

// ReserveID records and returns the lowest ID in r that is neither recorded
// for fsUUID on this host nor excluded, inside the caller's transaction, so
// that the ID and whatever the caller records with it commit together.
// The registry is per host (id_registry): fsUUID is the key of the
// filesystem on this host (the fallback's: its root's identity), so two
// hosts whose keys happen to agree (the same root path, a cloned
// filesystem) never share one sequence.
func (t *Tx) ReserveID(ctx context.Context, fsUUID string, r quota.IDRange, excluded map[quota.ProjectID]bool, owner string) (quota.ProjectID, error) {
	ids, err := t.ReserveIDs(ctx, fsUUID, r, excluded, []string{owner})
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// ReserveIDs is ReserveID for each of owners at once, in order: the IDs
// after the highest in use (the lowest free ones once the range's top is
// taken), in one read and one insert where one at a time were two
// statements an ID.
func (t *Tx) ReserveIDs(ctx context.Context, fsUUID string, r quota.IDRange, excluded map[quota.ProjectID]bool, owners []string) ([]quota.ProjectID, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if len(owners) == 0 {
		return nil, nil
	}
	if err := t.Lock(ctx, IDsLock(t.s.Host, fsUUID)); err != nil {
		return nil, err
	}
	ids, err := t.idsAfterHighest(ctx, fsUUID, r, excluded, len(owners))
	if err != nil {
		return nil, err
	}
	if len(ids) < len(owners) {
		if ids, err = t.lowestFreeIDs(ctx, fsUUID, r, excluded, len(owners)); err != nil {
			return nil, err
		}
	}
	args := make([]any, 0, 5*len(ids))
	now := base.ToMicros(time.Now())
	for i, id := range ids {
		args = append(args, t.s.Host, fsUUID, int64(id), owners[i], now)
	}
	_, err = t.Exec(ctx, `INSERT INTO id_registry (host, fs_key, project_id, owner, created_at) VALUES `+
		base.Placeholders(len(ids), "(?, ?, ?, ?, ?)"), args...)
	return ids, err
}

// idsAfterHighest are the n IDs after the highest in use, as useradd picks
// a UID: one index lookup however many IDs are taken (fewer than n once
// the range's top is near). Searching for the lowest free ones at every add
// compared every taken ID of the range with its neighbours, so that adding
// the 10,001st project paid for the 10,000 before it.
func (t *Tx) idsAfterHighest(ctx context.Context, fsUUID string, r quota.IDRange, excluded map[quota.ProjectID]bool, n int) ([]quota.ProjectID, error) {
	var hi sql.NullInt64
	if err := t.Get(ctx, &hi, `SELECT MAX(project_id) FROM id_registry WHERE host = ? AND fs_key = ? AND project_id >= ? AND project_id <= ?`,
		t.s.Host, fsUUID, int64(r.First), int64(r.Last)); err != nil {
		return nil, err
	}
	next := int64(r.First)
	if hi.Valid {
		next = hi.Int64 + 1
	}
	ids := make([]quota.ProjectID, 0, n)
	for ; next <= int64(r.Last) && len(ids) < n; next++ {
		if id := quota.ProjectID(next); !excluded[id] { // else in use on the filesystem by something else
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// lowestFreeIDs are the n lowest free IDs of the range: what is left once
// its top is taken.
func (t *Tx) lowestFreeIDs(ctx context.Context, fsUUID string, r quota.IDRange, excluded map[quota.ProjectID]bool, n int) ([]quota.ProjectID, error) {
	exhausted := fmt.Errorf("no free project ID left in %d-%d on filesystem %s", r.First, r.Last, fsUUID)
	// The first free IDs from start, found by the database: reading every
	// taken ID of the range sent thousands of rows to each add. The k-th
	// free ID (from 0) is start+k, or t+1+k' (k' <= k) for the highest
	// taken ID t below it: the candidates below hold the first `need`.
	ids := make([]quota.ProjectID, 0, n)
	for start := int64(r.First); len(ids) < n; {
		need := n - len(ids)
		offsets := "SELECT CAST(? AS BIGINT) AS k" + strings.Repeat(" UNION ALL SELECT CAST(? AS BIGINT)", need-1)
		args := make([]any, 0, 2*need+10)
		args = append(args, start)
		for k := range need {
			args = append(args, k)
		}
		for k := range need {
			args = append(args, k)
		}
		args = append(args, t.s.Host, fsUUID, start, int64(r.Last), int64(r.Last), t.s.Host, fsUUID, need)
		var free []int64
		if err := t.Sel(ctx, &free, `SELECT DISTINCT c FROM (
			SELECT CAST(? AS BIGINT) + o.k AS c FROM (`+offsets+`) o
			UNION ALL SELECT i.project_id + 1 + o.k FROM id_registry i, (`+offsets+`) o
				WHERE i.host = ? AND i.fs_key = ? AND i.project_id >= ? AND i.project_id < ?) x
			WHERE c <= ? AND NOT EXISTS (SELECT 1 FROM id_registry i WHERE i.host = ? AND i.fs_key = ? AND i.project_id = x.c)
			ORDER BY c LIMIT ?`, args...); err != nil {
			return nil, err
		}
		for _, id := range free {
			if !excluded[quota.ProjectID(id)] { // else in use on the filesystem by something else
				ids = append(ids, quota.ProjectID(id))
			}
		}
		if len(free) < need || free[len(free)-1] >= int64(r.Last) {
			if len(ids) < n {
				return nil, exhausted
			}
			break
		}
		start = free[len(free)-1] + 1
	}
	return ids[:n], nil
}

// ReleaseID forgets an ID; releasing an unknown ID succeeds.
func (t *Tx) ReleaseID(ctx context.Context, fsUUID string, id quota.ProjectID) error {
	_, err := t.Exec(ctx, `DELETE FROM id_registry WHERE host = ? AND fs_key = ? AND project_id = ?`, t.s.Host, fsUUID, int64(id))
	return err
}

// SetIDOwner renames the owner recorded with an ID (e.g. "removed:omni/cache"
// for an ID kept until its data is gone).
func (t *Tx) SetIDOwner(ctx context.Context, fsUUID string, id quota.ProjectID, owner string) error {
	_, err := t.Exec(ctx, `UPDATE id_registry SET owner = ? WHERE host = ? AND fs_key = ? AND project_id = ?`, owner, t.s.Host, fsUUID, int64(id))
	return err
}

// IDRecord is one registered project ID.
type IDRecord struct {
	FSUUID    string          `json:"fs_uuid" db:"fs_uuid"`
	ProjectID quota.ProjectID `json:"project_id" db:"project_id"`
	Owner     string          `json:"owner" db:"owner"`
}

// IDs lists this host's registered IDs of one filesystem.
func (s *Store) IDs(ctx context.Context, fsUUID string) ([]IDRecord, error) {
	var out []IDRecord
	err := s.Sel(ctx, &out, `SELECT fs_key AS fs_uuid, project_id, owner FROM id_registry WHERE host = ? AND fs_key = ? ORDER BY project_id`, s.Host, fsUUID)
	return out, err
}

// Blank reports whether this host has never recorded anything here: no
// project and not one journal record. A root that holds trees must not be
// run on such a store (a zero-length file, a new database, the wrong --db
// or --host), or every project and the journal would seem gone.
func (s *Store) Blank(ctx context.Context) (bool, error) {
	var n int
	if err := s.Get(ctx, &n, `SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM projects WHERE host = ? LIMIT 1) p) +
		(SELECT COUNT(*) FROM (SELECT 1 FROM events WHERE host = ? LIMIT 1) e)`, s.Host, s.Host); err != nil {
		return false, err
	}
	return n == 0, nil
}

func ProjectLock(host, name string) string { return "project:" + host + ":" + name }
func IDsLock(host, fsKey string) string    { return "ids:" + host + ":" + fsKey }

// Describe is the project's row in words, for an error.
func (p Project) Describe() string {
	if p.Adder == "" {
		return p.State
	}
	return fmt.Sprintf("%s by %s (the row created %s)", p.State, p.Adder, p.CreatedAt.Format(time.RFC3339Nano))
}
