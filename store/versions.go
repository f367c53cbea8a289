package store

import (
	"context"
	"database/sql"
)

// Version says which change of a project a read saw: Project moves with
// every commit that changes the project's row, its trees, its ledger or
// its reservations, Settings with every commit that changes the host's
// settings (migration 11's triggers, in the committing transaction, by
// whichever process commits). Two reads with equal Versions saw the same
// project. Zero: never changed since the versions began.
type Version struct{ Project, Settings int64 }

// ProjectVersion reads one project's Version in one prepared query (two
// primary-key lookups). Read it before the data it guards, as Generation:
// a commit in between then shows as a newer version at the next call.
func (s *Store) ProjectVersion(ctx context.Context, project string) (Version, error) {
	st, err := s.prepared(ctx, `SELECT project, version FROM project_versions WHERE host = ? AND project IN ('', ?)`)
	if err != nil {
		return Version{}, err
	}
	rows, err := st.QueryContext(ctx, s.Host, project)
	if err != nil {
		return Version{}, err
	}
	v, err := scanVersions(rows)
	return v.Of(project), err
}

// Versions is every project's Version, as ProjectVersions reads them.
type Versions struct {
	Projects map[string]int64
	Settings int64
}

// Of is one project's Version; a project absent is at version 0.
func (v Versions) Of(project string) Version {
	return Version{Project: v.Projects[project], Settings: v.Settings}
}

// ProjectVersions reads the Version of every project of this host in one
// statement: a reader of the whole root re-reads only the projects whose
// version moved.
func (s *Store) ProjectVersions(ctx context.Context) (Versions, error) {
	rows, err := s.db.QueryContext(ctx, s.db.Rebind(`SELECT project, version FROM project_versions WHERE host = ?`), s.Host)
	if err != nil {
		return Versions{}, err
	}
	return scanVersions(rows)
}

// scanVersions reads (project, version) rows, ” being the settings', and
// closes them.
func scanVersions(rows *sql.Rows) (Versions, error) {
	defer rows.Close()
	v := Versions{Projects: map[string]int64{}}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return Versions{}, err
		}
		if name == "" {
			v.Settings = n
		} else {
			v.Projects[name] = n
		}
	}
	return v, rows.Err()
}
