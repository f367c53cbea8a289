package registry

import (
	"context"
)

// ChangeMark is a cheap fingerprint of what this host's usage figures are
// made of: it moves whenever a project, tree, ledger row, reservation or
// setting of this host changes (each moves the project's version,
// migration 11's triggers), whenever a deletion of one of its paths is
// journalled done (touchVersion: its path leaves top_paths; a sweep's as it ends the project, EndSweep), whenever a snapshot of one of this host's
// trees is stored, a tree's reclaimable figure is planned again, or a
// scheduled pass records the free space. A cache of figures read from the
// store (the server's overview) is still right while the mark is
// unchanged — for this store's own records: the kernel's counters on XFS
// and the free space move without it, so such a cache bounds its age too.
// Another host's writes leave it where it is: in a busy fleet a mark over
// the whole database made every host's overview a rebuild at every
// request.
type ChangeMark struct {
	Versions      int64 // the sum of this host's project and settings versions
	Snapshots     int64 // this host's trees with a stored snapshot
	SnapshotTimes int64 // a checksum of when each was taken
	Reclaimable   int64 // a checksum of when each tree's reclaimable figure was planned
	Passes        int64 // when the last scheduled pass recorded the free space
}

// ChangeMark reads the mark in one prepared query: a range of this host's
// rows of three small tables (one row per project, one per tree), never a
// table that grows with time, and one index lookup.
func (s *Store) ChangeMark(ctx context.Context) (ChangeMark, error) {
	var m struct {
		V  int64 `db:"v"`
		N  int64 `db:"n"`
		AT int64 `db:"at"`
		R  int64 `db:"r"`
		P  int64 `db:"p"`
	}
	ctx, done, err := s.Bounded(ctx)
	if err != nil {
		return ChangeMark{}, err
	}
	st, err := s.Prepared(ctx, changeMarkQuery)
	if err != nil {
		return ChangeMark{}, done(err)
	}
	err = done(st.GetContext(ctx, &m, s.Host, s.Host, s.Host, s.Host, s.Host))
	return ChangeMark{Versions: m.V, Snapshots: m.N, SnapshotTimes: m.AT, Reclaimable: m.R, Passes: m.P}, err
}

// changeMarkQuery sums the snapshot and plan times modulo 2^31−1, so that
// the sum of any number of trees' stays within a BIGINT (SQLite's SUM
// fails on an overflow): a snapshot moves its tree's time by anything but
// a multiple of that (35 minutes), which is what a new one taken after
// the last does. A plan's count of rows moves it too.
const changeMarkQuery = `SELECT
		(SELECT COALESCE(SUM(version), 0) FROM project_versions WHERE host = ?) AS v,
		(SELECT COUNT(*) FROM snapshot_trees WHERE host = ?) AS n,
		(SELECT COALESCE(SUM(at % 2147483647), 0) FROM snapshot_trees WHERE host = ?) AS at,
		(SELECT COUNT(*) + COALESCE(SUM((planned_at + bytes) % 2147483647), 0) FROM reclaimable WHERE host = ?) AS r,
		(SELECT COALESCE(MAX(at), 0) FROM pass_free WHERE host = ?) AS p`
