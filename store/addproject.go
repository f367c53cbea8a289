package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lib/pq"

	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store/internal/base"
	"github.com/xfsq/xfsq/store/internal/registry"
)

// A project add is two transactions (the project and its trees recorded,
// then, once their directories exist, made ready), and each was a dozen
// statements: with PostgreSQL a millisecond away, 22 round trips made an
// add cost 43-115 ms. On PostgreSQL the first is BEGIN, its locks (with
// the settings the add's limits come from), one statement and COMMIT;
// the second is one statement, atomic on its own.
// SQLite, whose statements cost no round trip, runs the same steps one
// statement each.

// NewProject is what a project add records first: its row, in state
// adding and held by Adder, and its trees' rows, each with an ID reserved
// on the filesystem FSKey (ReserveIDs: from Range, none of Excluded).
type NewProject struct {
	Name, Adder string
	Created     time.Time
	Trees       []Tree // without their IDs, reserved in this order
	FSKey       string
	Range       quota.IDRange
	Excluded    map[quota.ProjectID]bool
}

// LockAdd takes, in one statement, the locks AddProject takes: the
// project name's and the ID registry's of fsKey, held to the end of the
// transaction. A caller that looks at the filesystem before AddProject
// (is a tree's directory there?) takes them first, so that what it saw
// holds until its rows commit. It returns this host's stored settings,
// read in that statement: an add needs its defaults, and with PostgreSQL
// a millisecond away their own read was a round trip of ~1.5 ms.
func (t *Tx) LockAdd(ctx context.Context, name, fsKey string) (settings map[string]string, err error) {
	var rows []struct {
		Key   sql.NullString `db:"key"`
		Value sql.NullString `db:"value"`
	}
	q, args := `SELECT key, value FROM settings WHERE host = ?`, []any{t.s.Host}
	keys := []string{registry.ProjectLock(t.s.Host, name), registry.IDsLock(t.s.Host, fsKey)}
	if t.s.Postgres {
		// The settings are read in the snapshot taken before the locks:
		// they need none, and the statements after this one see what every
		// earlier holder of the locks committed.
		q = `WITH locked AS (SELECT pg_advisory_xact_lock(hashtext(?)) AS name, pg_advisory_xact_lock(hashtext(?)) AS ids)
		SELECT s.key, s.value FROM locked LEFT JOIN settings s ON s.host = ?`
		args = []any{keys[0], keys[1], t.s.Host}
	}
	if err := t.Sel(ctx, &rows, q, args...); err != nil {
		return nil, err
	}
	t.Held(keys...)
	settings = make(map[string]string, len(rows))
	for _, r := range rows {
		if r.Key.Valid {
			settings[r.Key.String] = r.Value.String
		}
	}
	return settings, nil
}

// AddProject records p as InsertProject, ReserveIDs and InsertTrees do
// one after the other, in the caller's transaction, and returns p's trees
// with their IDs; when the name is taken it records nothing and returns
// the existing row, inserted false.
//
// On PostgreSQL it is one statement past the locks: the IDs after the
// highest in use are found and recorded in it, race-free since every
// reservation on fsKey holds its lock (taken in an earlier statement,
// whose snapshot this statement's reads follow). Only when the range's
// top is taken does it fall back to the steps one by one.
func (t *Tx) AddProject(ctx context.Context, p NewProject) (trees []Tree, existing Project, inserted bool, err error) {
	if err := t.Lock(ctx, registry.ProjectLock(t.s.Host, p.Name), registry.IDsLock(t.s.Host, p.FSKey)); err != nil {
		return nil, Project{}, false, err
	}
	if t.s.Postgres && len(p.Trees) > 0 {
		if err := p.Range.Validate(); err != nil {
			return nil, Project{}, false, err
		}
		// The adder's lease, as InsertProject records it, before the row
		// that names it (renewed for nothing if the name is taken).
		if err := t.Hold(ctx, p.Adder); err != nil {
			return nil, Project{}, false, err
		}
		trees, existing, done, err := t.addProjectAtOnce(ctx, p)
		if err != nil || done {
			return trees, existing, err == nil && existing.State == "", err
		}
	}
	if existing, inserted, err = t.InsertProject(ctx, p.Name, p.Adder, p.Created); err != nil || !inserted {
		return nil, existing, inserted, err
	}
	owners := make([]string, len(p.Trees))
	for i, tr := range p.Trees {
		owners[i] = tr.Project + "/" + tr.Area
	}
	ids, err := t.ReserveIDs(ctx, p.FSKey, p.Range, p.Excluded, owners)
	if err != nil {
		return nil, Project{}, false, err
	}
	trees = withIDs(p.Trees, ids)
	return trees, Project{}, true, t.InsertTrees(ctx, trees)
}

func withIDs(trees []Tree, ids []quota.ProjectID) []Tree {
	out := slices.Clone(trees)
	for i := range out {
		out[i].ProjectID = ids[i]
	}
	return out
}

// addProjectAtOnce is AddProject's one statement on PostgreSQL: done is
// false when it recorded nothing because fewer IDs than trees are free
// after the highest in use.
func (t *Tx) addProjectAtOnce(ctx context.Context, p NewProject) (trees []Tree, existing Project, done bool, err error) {
	h, n := t.s.Host, len(p.Trees)
	excluded := pq.Int64Array{} // NULL when nil, and <> ALL (NULL) keeps no ID
	for id := range p.Excluded {
		if id >= p.Range.First && id <= p.Range.Last {
			excluded = append(excluded, int64(id))
		}
	}
	args := []any{h, p.Name, // existing
		int64(p.Range.First), h, p.FSKey, int64(p.Range.First), int64(p.Range.Last), // next
		int64(p.Range.Last), int64(n + len(excluded) - 1), excluded, n} // ids
	for i, tr := range p.Trees {
		args = append(args, i+1, tr.Area, tr.Path, tr.Backend, tr.FSUUID, int64(tr.Limits.BytesSoft), int64(tr.Limits.BytesHard),
			int64(tr.Limits.InodesSoft), int64(tr.Limits.InodesHard), tr.CreatedDir, tr.Project+"/"+tr.Area)
	}
	args = append(args, n, h, p.Name, StateAdding, toMicros(p.Created), p.Adder, h, p.FSKey, toMicros(time.Now()), h, p.Name, h, p.Name)
	// The IDs after the highest in use (as idsAfterHighest), numbered k in
	// order; the trees are numbered in theirs. Every write is conditional
	// on ok: the name free and an ID for every tree.
	q := `WITH existing AS (SELECT state, created_at, adder FROM projects WHERE host = ? AND name = ?),
		next AS (SELECT COALESCE(MAX(project_id) + 1, CAST(? AS BIGINT)) AS id FROM id_registry
			WHERE host = ? AND fs_key = ? AND project_id >= ? AND project_id <= ?),
		ids AS (SELECT g AS project_id, ROW_NUMBER() OVER (ORDER BY g) AS k
			FROM next, generate_series(next.id, LEAST(CAST(? AS BIGINT), next.id + CAST(? AS BIGINT))) g
			WHERE g <> ALL (CAST(? AS BIGINT[])) ORDER BY g LIMIT ?),
		v (k, area, path, backend, fs_uuid, bytes_soft, bytes_hard, inodes_soft, inodes_hard, created_dir, owner) AS (VALUES ` +
		base.Placeholders(n, "(CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BOOLEAN), CAST(? AS TEXT))") + `),
		ok AS (SELECT NOT EXISTS (SELECT 1 FROM existing) AND (SELECT COUNT(*) FROM ids) = ? AS go),
		p AS (INSERT INTO projects (host, name, state, created_at, adder) SELECT ?, ?, ?, ?, ? FROM ok WHERE go),
		r AS (INSERT INTO id_registry (host, fs_key, project_id, owner, created_at)
			SELECT ?, ?, ids.project_id, v.owner, ? FROM ok, ids JOIN v ON v.k = ids.k WHERE ok.go),
		l AS (DELETE FROM ledger WHERE host = ? AND project = ? AND area IN (SELECT area FROM v) AND (SELECT go FROM ok)),
		t AS (INSERT INTO trees (host, ` + registry.TreeCols + `)
			SELECT ?, ?, v.area, v.path, v.backend, v.fs_uuid, ids.project_id, v.bytes_soft, v.bytes_hard, v.inodes_soft, v.inodes_hard, v.created_dir
			FROM ok, ids JOIN v ON v.k = ids.k WHERE ok.go)
		SELECT e.state, e.created_at, e.adder, ids.project_id
		FROM (SELECT 1) one LEFT JOIN existing e ON TRUE LEFT JOIN ids ON TRUE ORDER BY ids.k`
	var rows []struct {
		State     sql.NullString `db:"state"`
		CreatedAt sql.NullInt64  `db:"created_at"`
		Adder     sql.NullString `db:"adder"`
		ProjectID sql.NullInt64  `db:"project_id"`
	}
	if err := t.Sel(ctx, &rows, q, args...); err != nil {
		return nil, Project{}, false, err
	}
	if len(rows) > 0 && rows[0].State.Valid {
		r := rows[0]
		return nil, registry.ProjectRow{Name: p.Name, State: r.State.String, CreatedAt: r.CreatedAt.Int64, Adder: r.Adder.String}.ToProject(), true, nil
	}
	ids := make([]quota.ProjectID, 0, n)
	for _, r := range rows {
		if r.ProjectID.Valid {
			ids = append(ids, quota.ProjectID(r.ProjectID.Int64))
		}
	}
	if len(ids) < n {
		return nil, Project{}, false, nil
	}
	return withIDs(p.Trees, ids), Project{}, true, nil
}

// MakeReady ends a project add whose trees are in place: their walks
// (none on XFS) recorded as their baselines, the project ready and held by
// nobody, and added journalled, all or nothing (SetBaselines,
// SetProjectState and AppendEvent in one transaction). It returns the
// walked trees as Read reads them at that moment, in the walks' order.
//
// On PostgreSQL it is one statement, its own transaction. With walks it
// takes the admission lock, as SetBaselines does, before any row it
// writes (every write is conditional on the lock's row) and holds it to
// its commit; what it reads under its snapshot, taken before the lock, is
// the new trees' rows and ledger, which no write reaches while the project
// is being added.
func (s *Store) MakeReady(ctx context.Context, name, adder, actor string, walks []WalkRecord, added journal.ProjectAdded) ([]TreeRead, error) {
	if !s.Postgres {
		return s.makeReadyInSteps(ctx, name, adder, actor, walks, added)
	}
	payload, err := json.Marshal(added)
	if err != nil {
		return nil, err
	}
	// The project made ready, and its record journalled only then.
	ready := func(cond string) string {
		return `p AS (UPDATE projects SET state = ?, adder = '' WHERE host = ? AND name = ? AND state = ? AND adder = ?` + cond + ` RETURNING name),
		e AS (INSERT INTO events (at, type, host, project, actor, payload) SELECT ?, ?, ?, ?, ?, ? FROM p)`
	}
	readyArgs := []any{StateReady, s.Host, name, StateAdding, adder, toMicros(time.Now()), string(added.Type()), s.Host, name, actor, string(payload)}
	b := s.BaselinesOf(walks)
	var rows []readyRow
	if b == nil {
		err = s.Sel(ctx, &rows, `WITH `+ready("")+` SELECT COUNT(*) AS ready FROM p`, readyArgs...)
	} else {
		// As Read: each walked tree's new row, with its reservations'
		// sums; none walked (the project gone), one row of zeroes.
		// Every write hangs on p, so that nothing is written for an add
		// this one no longer is (taken over and rolled back while it
		// paused, the name perhaps added afresh).
		args := append([]any{"admission:" + s.Host}, b.Args(readyArgs, b.SeenArgs, b.SumsArgs, b.UpdateArgs)...)
		err = s.Sel(ctx, &rows, `WITH lk AS (SELECT pg_advisory_xact_lock(hashtext(?)) AS held), `+b.With[len("WITH "):]+`,
		`+ready(` AND EXISTS (SELECT 1 FROM lk)`)+`,
		seen AS (DELETE FROM ledger WHERE EXISTS (SELECT 1 FROM p) AND `+b.Seen+`),
		`+b.Sums+`,
		walked AS (`+b.Update+` AND EXISTS (SELECT 1 FROM p)
			RETURNING trees.project, trees.area, trees.bytes_soft, trees.bytes_hard, trees.inodes_soft, trees.inodes_hard,
				trees.walked_bytes + trees.ledger_bytes AS bytes, trees.walked_inodes + trees.ledger_inodes AS inodes,
				trees.walked_at, trees.bytes_soft_since, trees.inodes_soft_since)
		SELECT (SELECT COUNT(*) FROM p) AS ready, COALESCE(w.project, '') AS project, COALESCE(w.area, '') AS area,
			COALESCE(w.bytes_soft, 0) AS bytes_soft, COALESCE(w.bytes_hard, 0) AS bytes_hard,
			COALESCE(w.inodes_soft, 0) AS inodes_soft, COALESCE(w.inodes_hard, 0) AS inodes_hard,
			COALESCE(w.bytes + COALESCE((SELECT SUM(r.bytes) FROM reservations r WHERE r.host = ? AND r.project = w.project AND r.area = w.area), 0), 0) AS bytes,
			COALESCE(w.inodes + COALESCE((SELECT SUM(r.inodes) FROM reservations r WHERE r.host = ? AND r.project = w.project AND r.area = w.area), 0), 0) AS inodes,
			COALESCE(w.walked_at, 0) AS walked_at, COALESCE(w.bytes_soft_since, 0) AS bytes_since, COALESCE(w.inodes_soft_since, 0) AS inodes_since
		FROM (SELECT 1) one LEFT JOIN walked w ON TRUE`, append(args, s.Host, s.Host)...)
	}
	s.Committed.Add(1) // a commit of this process's, as InTx counts them (Generation); even a failed one
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || rows[0].Ready == 0 {
		return nil, notThisAdd(name)
	}
	return readsOf(rows, walks)
}

// notThisAdd: the project is gone, or its row is no longer the add that
// calls MakeReady.
func notThisAdd(name string) error {
	return fmt.Errorf("project %q: %w, or no longer this add's (taken over while it paused)", name, ErrNotFound)
}

// makeReadyInSteps is MakeReady as one step a statement.
func (s *Store) makeReadyInSteps(ctx context.Context, name, adder, actor string, walks []WalkRecord, added journal.ProjectAdded) ([]TreeRead, error) {
	var rows []readyRow
	b := s.BaselinesOf(walks)
	err := s.InTx(ctx, func(tx *Tx) error {
		// First, and only for the add that recorded the row: one the
		// add no longer is gets nothing written.
		res, err := tx.Exec(ctx, `UPDATE projects SET state = ?, adder = '' WHERE host = ? AND name = ? AND state = ? AND adder = ?`,
			StateReady, s.Host, name, StateAdding, adder)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notThisAdd(name)
		}
		if err := tx.SetBaselines(ctx, walks); err != nil {
			return err
		}
		if err := tx.AppendEvent(ctx, name, actor, added); err != nil {
			return err
		}
		if b == nil {
			return nil
		}
		return tx.Sel(ctx, &rows, b.With+` SELECT 1 AS ready, t.project, t.area, t.bytes_soft, t.bytes_hard, t.inodes_soft, t.inodes_hard,
			t.walked_bytes + t.ledger_bytes
				+ COALESCE((SELECT SUM(r.bytes) FROM reservations r WHERE r.host = t.host AND r.project = t.project AND r.area = t.area), 0) AS bytes,
			t.walked_inodes + t.ledger_inodes
				+ COALESCE((SELECT SUM(r.inodes) FROM reservations r WHERE r.host = t.host AND r.project = t.project AND r.area = t.area), 0) AS inodes,
			t.walked_at, t.bytes_soft_since AS bytes_since, t.inodes_soft_since AS inodes_since
			FROM trees t JOIN w ON w.project = t.project AND w.area = t.area WHERE t.host = ?`, b.Args([]any{s.Host})...)
	})
	if err != nil {
		return nil, err
	}
	return readsOf(rows, walks)
}

// readyRow is one walked tree as MakeReady reads it.
type readyRow struct {
	Ready       int64  `db:"ready"`
	Project     string `db:"project"`
	Area        string `db:"area"`
	BytesSoft   int64  `db:"bytes_soft"`
	BytesHard   int64  `db:"bytes_hard"`
	InodesSoft  int64  `db:"inodes_soft"`
	InodesHard  int64  `db:"inodes_hard"`
	Bytes       int64  `db:"bytes"`
	Inodes      int64  `db:"inodes"`
	WalkedAt    int64  `db:"walked_at"`
	BytesSince  int64  `db:"bytes_since"`
	InodesSince int64  `db:"inodes_since"`
}

// readsOf is rows as Read answers, in the order of walks (those with a
// baseline).
func readsOf(rows []readyRow, walks []WalkRecord) ([]TreeRead, error) {
	byKey := map[TreeKey]readyRow{}
	for _, r := range rows {
		byKey[TreeKey{Project: r.Project, Area: r.Area}] = r
	}
	var out []TreeRead
	for _, w := range walks {
		if w.Baseline == nil {
			continue
		}
		r, ok := byKey[TreeKey{Project: w.Snapshot.Project, Area: w.Snapshot.Area}]
		if !ok {
			return nil, fmt.Errorf("tree %s/%s: %w", w.Snapshot.Project, w.Snapshot.Area, ErrNotFound)
		}
		out = append(out, TreeRead{
			Limits:         quota.Limits{BytesSoft: uint64(r.BytesSoft), BytesHard: uint64(r.BytesHard), InodesSoft: uint64(r.InodesSoft), InodesHard: uint64(r.InodesHard)},
			Used:           quota.Usage{Bytes: base.NonNegative(r.Bytes), Inodes: base.NonNegative(r.Inodes)},
			WalkedAt:       fromMicros(r.WalkedAt),
			BytesSoftSince: fromMicros(r.BytesSince), InodesSoftSince: fromMicros(r.InodesSince),
		})
	}
	return out, nil
}

// The rollback of an add left half-way (its process died, or its own
// failure) is decided here, under the project name's lock, the one every
// add of the name takes: processes that each judged the same add dead
// would otherwise each roll it back, the last one after the name was
// added afresh, clearing the new project's limits, removing its
// directories (the same paths), releasing its IDs (often the same
// numbers) and deleting its row. TakeOverAdd hands the add to one
// rollback, whose holder the row then names: no other rollback of it
// proceeds, and no add of the name begins, until the rollback deletes the
// row (checking with EndRollbackAdd that it still holds it), after it has
// removed the directories.

// ErrAddChanged is wrapped when a rollback of an add finds, under the
// project name's lock, that the row is no longer the add it set out to
// undo (another process rolled it back, took the rollback over, or added
// the name afresh) or that the add's holder is not gone: it did nothing.
var ErrAddChanged = errors.New("no longer the interrupted add it was taken for")

// TakeOverAdd takes the rollback of seen, an add left half-way, for c's
// holder, and returns the add's trees. The row must still be seen's
// (adding, the same holder and creation stamp) and its holder c's own or
// gone, as c.Gone decides on its lease read here; else it changes
// nothing and wraps ErrAddChanged.
func (t *Tx) TakeOverAdd(ctx context.Context, seen Project, c Claim) ([]Tree, error) {
	if err := t.Lock(ctx, registry.ProjectLock(t.s.Host, seen.Name)); err != nil {
		return nil, err
	}
	now, err := t.Project(ctx, seen.Name)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, fmt.Errorf("project %q: %w: it is gone", seen.Name, ErrAddChanged)
	case err != nil:
		return nil, err
	case seen.State != StateAdding || now.State != StateAdding || now.Adder != seen.Adder || !now.CreatedAt.Equal(AsStored(seen.CreatedAt)):
		return nil, fmt.Errorf("project %q: %w: it is now %s", seen.Name, ErrAddChanged, now.Describe())
	}
	if now.Adder != c.Holder {
		if err := t.takeOverProject(ctx, c, now, "add"); err != nil {
			if errors.Is(err, errHolderUnderWay) {
				err = fmt.Errorf("project %q: %w: its holder %s is under way", seen.Name, ErrAddChanged, now.Adder)
			}
			return nil, err
		}
	}
	return registry.ReadTrees(ctx, t.Sel, t.s.Host, seen.Name)
}

// errHolderUnderWay: the holder of a half-done add or removal is not gone.
var errHolderUnderWay = errors.New("its holder is under way")

// takeOverProject hands now's row, half-way through an add or a removal
// (what) by a holder that is gone, to c's holder, and journals the
// takeover in the same transaction; with the holder not gone it wraps
// errHolderUnderWay and changes nothing. The caller holds the name's lock.
func (t *Tx) takeOverProject(ctx context.Context, c Claim, now Project, what string) error {
	lease, why, err := t.IsGone(ctx, c, now.Adder)
	if err != nil {
		return err
	}
	if why == "" {
		return fmt.Errorf("project %q: %w (%s)", now.Name, errHolderUnderWay, now.Adder)
	}
	if err := t.Hold(ctx, c.Holder); err != nil {
		return err
	}
	if _, err := t.Exec(ctx, `UPDATE projects SET adder = ? WHERE host = ? AND name = ?`, c.Holder, t.s.Host, now.Name); err != nil {
		return err
	}
	return t.TookOver(ctx, c, now.Name, what, now.Name, now.Adder, why, lease)
}

// TakeOverRemove resumes, for c's holder, the removal of seen that
// another holder left half-way: under the name's lock the row must still
// be that removal's, and its holder gone (as c.Gone decides) or c's own.
// The takeover is journalled. Else it changes nothing and wraps
// ErrRemoveChanged (the holder is not gone, or the row is no longer a
// removal) or ErrNotFound.
func (t *Tx) TakeOverRemove(ctx context.Context, seen Project, c Claim) error {
	if err := t.Lock(ctx, registry.ProjectLock(t.s.Host, seen.Name)); err != nil {
		return err
	}
	now, err := t.Project(ctx, seen.Name)
	switch {
	case err != nil:
		return err
	case now.State != StateRemoving:
		return fmt.Errorf("project %q: %w: it is now %s", seen.Name, ErrRemoveChanged, now.Describe())
	case now.Adder == c.Holder:
		return nil
	}
	if err := t.takeOverProject(ctx, c, now, "remove"); err != nil {
		if errors.Is(err, errHolderUnderWay) {
			err = fmt.Errorf("project %q: %w: its holder %s is under way", seen.Name, ErrRemoveChanged, now.Adder)
		}
		return err
	}
	return nil
}

// ErrRemoveChanged is wrapped when a removal left half-way turns out,
// under the name's lock, to be another holder's that is not gone, or no
// longer a removal, as ErrAddChanged is for an add.
var ErrRemoveChanged = errors.New("no longer the interrupted removal it was taken for")

// EndRollbackAdd checks, under the project name's lock, that holder still
// holds the rollback of the add of name it took over (TakeOverAdd): else
// it wraps ErrAddChanged, and the caller's transaction must change nothing.
func (t *Tx) EndRollbackAdd(ctx context.Context, name, holder string) error {
	if err := t.Lock(ctx, registry.ProjectLock(t.s.Host, name)); err != nil {
		return err
	}
	now, err := t.Project(ctx, name)
	switch {
	case errors.Is(err, ErrNotFound):
		return fmt.Errorf("project %q: %w: it is gone", name, ErrAddChanged)
	case err != nil:
		return err
	case now.State != StateAdding || now.Adder != holder:
		return fmt.Errorf("project %q: %w: its rollback was taken over (it is now %s)", name, ErrAddChanged, now.Describe())
	}
	return nil
}
