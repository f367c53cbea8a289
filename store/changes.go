package store

import "context"

// ChangeMark is a cheap fingerprint of what the usage figures are made of:
// it moves whenever a journal record, a ledger row or a snapshot is added
// and whenever a write's reservation begins, grows or ends. A cache of
// figures read from the store (the server's overview) is still right while
// the mark is unchanged — for this store's own records: the kernel's
// counters on XFS, and a walk recorded only as a baseline (project show
// --refresh), move without it, so such a cache bounds its age too.
type ChangeMark struct {
	Events, Ledger, Snapshots                    int64
	Reservations, LastReservation, ReservedBytes int64
}

// ChangeMark reads the mark in one query. Each part is the maximum of an
// auto-increment key (an index lookup on both drivers) or an aggregate of
// the reservations, which hold only the writes in flight; it is read for
// every host, so another host's change moves it too (a cache is then
// remade for nothing, never kept wrongly).
func (s *Store) ChangeMark(ctx context.Context) (ChangeMark, error) {
	var m struct {
		E  int64 `db:"e"`
		L  int64 `db:"l"`
		S  int64 `db:"s"`
		RN int64 `db:"rn"`
		RM int64 `db:"rm"`
		RB int64 `db:"rb"`
	}
	err := s.get(ctx, &m, `SELECT
		(SELECT COALESCE(MAX(id), 0) FROM events) AS e,
		(SELECT COALESCE(MAX(id), 0) FROM ledger) AS l,
		(SELECT COALESCE(MAX(id), 0) FROM snapshots) AS s,
		(SELECT COUNT(*) FROM reservations) AS rn,
		(SELECT COALESCE(MAX(id), 0) FROM reservations) AS rm,
		(SELECT COALESCE(SUM(bytes), 0) FROM reservations) AS rb`)
	return ChangeMark{Events: m.E, Ledger: m.L, Snapshots: m.S, Reservations: m.RN, LastReservation: m.RM, ReservedBytes: m.RB}, err
}
