package registry

import (
	"context"
	"database/sql"
	"maps"

	"github.com/xfsq/xfsq/store/internal/base"
)

// Version says which change of a project a read saw: Project moves with
// every commit that changes the project's row, its trees, its ledger or
// its reservations, Settings with every commit that changes the host's
// settings (migration 11's triggers, in the committing transaction, by
// whichever process commits). Two reads with equal Versions saw the same
// project. Zero: never changed since the versions began.
type Version struct{ Project, Settings int64 }

// Versions is every project's Version, as VersionsAt reads them.
type Versions struct {
	Projects map[string]int64
	Settings int64
}

// Of is one project's Version; a project absent is at version 0.
func (v Versions) Of(project string) Version {
	return Version{Project: v.Projects[project], Settings: v.Settings}
}

// VersionAt is project's Version as of no earlier than gen, a Generation
// the caller read before calling, and before the data the version guards:
// a commit in between then shows as a newer version at the next call.
//
// The store follows every project's version of this host (versionFeed):
// while gen is the generation it last followed under, the answer needs no
// query; when gen has moved, one read of the rows changed since brings
// every project up to date at once. A server checking a thousand projects
// beside passes that commit hundreds of times a second so reads once per
// commit, not once per project per commit.
func (s *Store) VersionAt(ctx context.Context, gen Generation, project string) (Version, error) {
	f := &s.versions
	if err := s.LockWithin(ctx, &f.mu); err != nil {
		return Version{}, err
	}
	defer f.mu.Unlock()
	if err := f.upTo(ctx, s, gen); err != nil {
		return Version{}, err
	}
	return f.Seen.Of(project), nil
}

// VersionsAt is every project's Version as of no earlier than gen (as
// VersionAt), in maps of the caller's own.
func (s *Store) VersionsAt(ctx context.Context, gen Generation) (Versions, error) {
	f := &s.versions
	if err := s.LockWithin(ctx, &f.mu); err != nil {
		return Versions{}, err
	}
	defer f.mu.Unlock()
	if err := f.upTo(ctx, s, gen); err != nil {
		return Versions{}, err
	}
	return Versions{Projects: maps.Clone(f.Seen.Projects), Settings: f.Seen.Settings}, nil
}

// versionFeed is the store's view of every project's version, brought up
// to date by reading only the rows whose changed stamp (migration 12,
// changeOrder) is at or past cursor.
type versionFeed struct {
	mu     base.Lock  // held across its read of the store: taken within a request's budget
	gen    Generation // under which seen was last brought up to date; zero: never
	cursor int64      // every change stamped below it has been read
	Seen   Versions
	// follows counts the reads of changed rows (what the tests hold the
	// feed to: one per generation, however many projects ask).
	follows int64
}

// upTo brings f up to date unless it already is for gen; f.mu is held.
func (f *versionFeed) upTo(ctx context.Context, s *Store, gen Generation) error {
	if gen.Known() && gen == f.gen {
		return nil
	}
	f.gen = Generation{} // until the read below succeeds
	if err := f.follow(ctx, s); err != nil {
		return err
	}
	f.gen = gen
	return nil
}

// follow reads the rows changed since the last read: every change committed
// before it began is then in f.seen. A row read twice is harmless (the
// version is its value, not an increment), so the cursor may lag; it must
// never pass a change that can still commit (changeOrder).
func (f *versionFeed) follow(ctx context.Context, s *Store) (err error) {
	f.follows++
	if f.Seen.Projects == nil {
		f.Seen.Projects = map[string]int64{}
	}
	// One statement, one snapshot: the horizon is read under the same
	// snapshot as the rows, and a LEFT JOIN brings it back when no row
	// changed.
	ctx, done, err := s.Bounded(ctx)
	if err != nil {
		return err
	}
	defer func() { err = done(err) }()
	st, err := s.Prepared(ctx, `WITH h AS (SELECT `+feedHorizon(s.Postgres)+` AS horizon)
		SELECT h.horizon, v.project, v.version FROM h LEFT JOIN project_versions v ON v.host = ? AND v.changed >= ?`)
	if err != nil {
		return err
	}
	args := []any{s.Host, f.cursor}
	if !s.Postgres {
		args = append([]any{s.Host}, args...) // the horizon's own host
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var horizon int64
	for rows.Next() {
		var project sql.NullString
		var version sql.NullInt64
		if err := rows.Scan(&horizon, &project, &version); err != nil {
			return err
		}
		if project.Valid {
			f.see(project.String, version.Int64)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	f.cursor = horizon
	return nil
}

// feedHorizon is where the next read of the feed resumes (changeOrder):
// under PostgreSQL the oldest transaction still running, whose id and
// every later one may yet commit a change; under SQLite, whose writers are
// serial, one past the host's highest stamp.
func feedHorizon(postgres bool) string {
	if postgres {
		return `pg_snapshot_xmin(pg_current_snapshot())::text::bigint`
	}
	return `(SELECT COALESCE(MAX(changed), 0) + 1 FROM project_versions WHERE host = ?)`
}

// see records one row, project "" being the settings'.
func (f *versionFeed) see(project string, version int64) {
	if project == "" {
		f.Seen.Settings = version
	} else {
		f.Seen.Projects[project] = version
	}
}

// VersionFollows is how many reads of changed rows the version feed has
// made (what the tests hold the feed to).
func (s *Store) VersionFollows() int64 { return s.versions.follows }
