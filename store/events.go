package store

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// Event types.
const (
	EventProjectAdded   = "project.added"
	EventProjectRemoved = "project.removed"
	EventQuotaChanged   = "quota.changed"
	EventEvicted        = "storage.evicted"
	EventRepaired       = "doctor.repaired"
	EventSettingChanged = "settings.changed"
	// EventRootInitialised is a store's first record of a root (xfsq init).
	EventRootInitialised = "root.initialised"
)

// Event is one journal record. Payload is JSON; Actor is a user or token
// name, never a secret.
type Event struct {
	ID      int64           `json:"id"`
	At      time.Time       `json:"recorded_at"`
	Type    string          `json:"type"`
	Host    string          `json:"host"`
	Project string          `json:"project,omitempty"`
	Actor   string          `json:"actor"`
	Payload json.RawMessage `json:"payload"`
}

// AppendEvent journals an event inside the caller's transaction, so the
// record commits exactly when the change it describes does.
func (t *Tx) AppendEvent(ctx context.Context, typ, project, actor string, payload any) error {
	data, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	const insert = `INSERT INTO events (at, type, host, project, actor, payload) VALUES (?, ?, ?, ?, ?, ?)`
	args := []any{toMicros(time.Now()), typ, t.s.Host, project, actor, string(data)}
	if typ != EventEvicted {
		_, err = t.exec(ctx, insert, args...)
		return err
	}
	var id int64
	if err := t.get(ctx, &id, insert+` RETURNING id`, args...); err != nil {
		return err
	}
	return t.trackEviction(ctx, id, data)
}

// EventFilter selects events; zero fields select everything.
type EventFilter struct {
	Type, Project string
	// Projects, when non-nil, keeps only events of these projects (a
	// reader limited to them); an empty non-nil list keeps none.
	Projects []string
	Since    time.Time
	Limit    int   // newest first; 0 means 100
	BeforeID int64 // for paging: only events older than this ID
}

type eventRow struct {
	ID      int64  `db:"id"`
	At      int64  `db:"at"`
	Type    string `db:"type"`
	Host    string `db:"host"`
	Project string `db:"project"`
	Actor   string `db:"actor"`
	Payload string `db:"payload"`
}

// Events lists journal records, newest first.
func (s *Store) Events(ctx context.Context, f EventFilter) ([]Event, error) {
	q := `SELECT id, at, type, host, project, actor, payload FROM events WHERE host = ?`
	args := []any{s.Host}
	if f.Type != "" {
		q += ` AND type = ?`
		args = append(args, f.Type)
	}
	if f.Project != "" {
		q += ` AND project = ?`
		args = append(args, f.Project)
	}
	if f.Projects != nil {
		if len(f.Projects) == 0 {
			return []Event{}, nil
		}
		q += ` AND project IN (?` + strings.Repeat(`, ?`, len(f.Projects)-1) + `)`
		for _, p := range f.Projects {
			args = append(args, p)
		}
	}
	if !f.Since.IsZero() {
		q += ` AND at >= ?`
		args = append(args, toMicros(f.Since))
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
	var rows []eventRow
	if err := s.sel(ctx, &rows, q, args...); err != nil {
		return nil, err
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = Event{ID: r.ID, At: fromMicros(r.At), Type: r.Type, Host: r.Host, Project: r.Project, Actor: r.Actor, Payload: json.RawMessage(r.Payload)}
	}
	return out, nil
}

// MarshalJSON adds the payload's own fields (path, bytes, state …) beside
// the event's, so `events --json` lists a record's fields at the top; the
// event's fields win a clash, and "payload" stays whole.
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	base, err := json.Marshal(plain(e))
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(e.Payload, &fields) != nil || len(fields) == 0 {
		return base, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(base, &top); err != nil {
		return nil, err
	}
	for k, v := range fields {
		if _, taken := top[k]; !taken {
			top[k] = v
		}
	}
	return json.Marshal(top)
}
