package eventlog

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/store/internal/base"
)

// AppendEvent journals p inside the caller's transaction, so the record
// commits exactly when the change it describes does.
func (t *Tx) AppendEvent(ctx context.Context, project, actor string, p journal.Payload) error {
	if err := t.AppendEventOfType(ctx, p.Type(), project, actor, p); err != nil {
		return err
	}
	return t.recordPassFree(ctx, p)
}

// AppendEventOfType journals payload's JSON as a record of type typ; tests use it
// to journal records in the forms older versions wrote.
func (t *Tx) AppendEventOfType(ctx context.Context, typ journal.Type, project, actor string, payload any) error {
	data, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	const insert = `INSERT INTO events (at, type, host, project, actor, payload) VALUES (?, ?, ?, ?, ?, ?)`
	args := []any{base.ToMicros(time.Now()), string(typ), t.s.Host, project, actor, string(data)}
	if typ != journal.TypeEvicted {
		_, err = t.Exec(ctx, insert, args...)
		return err
	}
	var id int64
	if err := t.Get(ctx, &id, insert+` RETURNING id`, args...); err != nil {
		return err
	}
	return t.trackEviction(ctx, id, project, data)
}

// EventFilter selects events; zero fields select everything.
type EventFilter struct {
	Type    journal.Type
	Project string
	// Projects, when non-nil, keeps only events of these projects (a
	// reader limited to them); an empty non-nil list keeps none.
	Projects []string
	Since    time.Time
	Limit    int   // newest first; 0 means 100
	BeforeID int64 // for paging: only events older than this ID
	// Hosts, when non-nil, reads these hosts' records instead of this
	// host's (the fleet view); AllHosts reads every host's.
	Hosts    []string
	AllHosts bool
}

type EventRow struct {
	ID      int64  `db:"id"`
	At      int64  `db:"at"`
	Type    string `db:"type"`
	Host    string `db:"host"`
	Project string `db:"project"`
	Actor   string `db:"actor"`
	Payload string `db:"payload"`
}

// Events lists journal records, newest first.
func (s *Store) Events(ctx context.Context, f EventFilter) ([]journal.Event, error) {
	q := `SELECT id, at, type, host, project, actor, payload FROM events WHERE host = ?`
	args := []any{s.Host}
	switch {
	case f.AllHosts:
		q, args = `SELECT id, at, type, host, project, actor, payload FROM events WHERE 1 = 1`, nil
	case len(f.Hosts) > 0:
		q = `SELECT id, at, type, host, project, actor, payload FROM events WHERE host IN (?` + strings.Repeat(`, ?`, len(f.Hosts)-1) + `)`
		args = nil
		for _, h := range f.Hosts {
			args = append(args, h)
		}
	}
	if f.Type != "" {
		q += ` AND type = ?`
		args = append(args, string(f.Type))
	}
	if f.Project != "" {
		q += ` AND project = ?`
		args = append(args, f.Project)
	}
	if f.Projects != nil {
		if len(f.Projects) == 0 {
			return []journal.Event{}, nil
		}
		q += ` AND project IN (?` + strings.Repeat(`, ?`, len(f.Projects)-1) + `)`
		for _, p := range f.Projects {
			args = append(args, p)
		}
	}
	if !f.Since.IsZero() {
		q += ` AND at >= ?`
		args = append(args, base.ToMicros(f.Since))
	}
	if f.BeforeID > 0 {
		q += ` AND id < ?`
		args = append(args, f.BeforeID)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	var rows []EventRow
	if err := s.Sel(ctx, &rows, q, args...); err != nil {
		return nil, err
	}
	return EventsOf(rows), nil
}

func EventsOf(rows []EventRow) []journal.Event {
	out := make([]journal.Event, len(rows))
	for i, r := range rows {
		out[i] = journal.Event{ID: r.ID, At: base.FromMicros(r.At), Type: journal.Type(r.Type), Host: r.Host, Project: r.Project,
			Actor: r.Actor, Payload: json.RawMessage(r.Payload)}
	}
	return out
}

// EvictedSinceSnapshots is this host's deletion records (storage.evicted)
// of area's trees, each younger than its tree's stored snapshot, newest
// first and at most limit: what a view of those snapshots must take out.
// One statement for every tree (a read per tree was one round trip per
// project), bounded below by the oldest of those snapshots.
func (s *Store) EvictedSinceSnapshots(ctx context.Context, area string, limit int) ([]journal.Event, error) {
	var rows []EventRow
	err := s.Sel(ctx, &rows, `SELECT e.id, e.at, e.type, e.host, e.project, e.actor, e.payload FROM events e
		JOIN snapshot_trees t ON t.host = e.host AND t.project = e.project AND t.area = ?
		WHERE e.host = ? AND e.type = ? AND e.at >= t.at
			AND e.at >= (SELECT COALESCE(MIN(at), 0) FROM snapshot_trees WHERE host = ? AND area = ?)
		ORDER BY e.id DESC LIMIT ?`, area, s.Host, string(journal.TypeEvicted), s.Host, area, limit)
	if err != nil {
		return nil, err
	}
	return EventsOf(rows), nil
}
