package readmodel

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/units"
)

// Event is one journal record, as every shell shows it.
type Event = journal.Event

// EventQuery selects journal records; the zero value is the newest 100.
type EventQuery struct {
	Type, Project string
	// Projects, when non-nil, keeps only records of these projects: what
	// a reader limited to them may see (records of no project excluded).
	Projects []string
	Since    time.Time // only records at or after this
	// Limit is at most this many, newest first: 1 to MaxEventLimit; 0 is 100.
	Limit int
	// Cursor continues a previous page (EventPage.Next); "" starts at the newest.
	Cursor string
	// Hosts reads these hosts' records instead of this host's; AllHosts
	// every host's (the fleet view: each record names its host).
	Hosts    []string
	AllHosts bool
}

// MaxEventLimit bounds one page, so that no caller asks the store for the
// whole journal at once.
const MaxEventLimit = 10000

// EventPage is one page of the journal, newest first.
type EventPage struct {
	Events []Event `json:"events"`
	// Next is the cursor of the page after this one; "" when this is the last.
	Next string `json:"next,omitempty"`
}

// sinceLayouts are the times --since takes besides RFC 3339: a date, or a
// date and time, in the zone of now (the operator's).
var sinceLayouts = []string{time.DateOnly, "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02T15:04:05", time.DateTime}

// ParseSince reads a time: a duration ago (24h, 7d), an RFC 3339 time, or
// a date (2020-01-01) or date and time (2020-01-01 10:00) in now's zone.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if d, err := units.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range sinceLayouts {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			return t, nil
		}
	}
	return time.Time{}, inputErrorf("since %q: use a duration ago (24h, 7d), a date (2026-11-30), a local time "+
		"(2026-11-30 10:00) or an RFC 3339 time (2026-11-30T10:00:00Z)", s)
}

// checkEventFilter refuses a filter that can only be a mistake: a type
// the journal never records, or a project that neither exists nor ever
// had a record (a removed project's history stays searchable).
func (m *Model) checkEventFilter(ctx context.Context, q EventQuery) error {
	// A type the journal never records is a typo, refused rather than
	// answered with nothing.
	if q.Type != "" && !journal.Type(q.Type).Known() {
		return inputErrorf("event type %q: use one of %s", q.Type, journal.TypeNames())
	}
	if q.Project == "" {
		return nil
	}
	if _, err := m.Store.Project(ctx, q.Project); err == nil {
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	evs, err := m.Store.Events(ctx, store.EventFilter{Project: q.Project, Limit: 1})
	if err != nil {
		return fmt.Errorf("read the journal: %w", err)
	}
	if len(evs) == 0 {
		return errkind.WithFix(errkind.NotFound, fmt.Errorf("project %q %w, and the journal has no record of it", q.Project, core.ErrNotFound),
			errkind.Fix("see %s", errkind.Do(errkind.OpProjectList, "")))
	}
	return nil
}

// checkFleetEventFilter is checkEventFilter for a query of this host; one
// across hosts checks the hosts it names and the type, since a project
// name means another project on each host.
func (m *Model) checkFleetEventFilter(ctx context.Context, q EventQuery) error {
	if !q.AllHosts && len(q.Hosts) == 0 {
		return m.checkEventFilter(ctx, q)
	}
	if err := m.checkEventFilter(ctx, EventQuery{Type: q.Type}); err != nil {
		return err
	}
	if q.AllHosts && len(q.Hosts) > 0 {
		return fieldErrorf("hosts", "name hosts or ask for all of them, not both")
	}
	return m.CheckHosts(ctx, q.Hosts)
}

// The cursor is the ID of the last record a page showed: the journal is
// append-only with increasing IDs, so "older than it" names the same
// records however many are appended meanwhile. It is opaque to callers so
// that its form may change.
func encodeCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("e" + strconv.FormatInt(id, 10)))
}

func decodeCursor(c string) (int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil && len(b) > 1 && b[0] == 'e' {
		if id, err := strconv.ParseInt(string(b[1:]), 10, 64); err == nil && id > 0 {
			return id, nil
		}
	}
	return 0, inputErrorf("cursor %q is not one a previous page gave", c)
}

// Events is one page of the journal. Events is never nil.
func (m *Model) Events(ctx context.Context, q EventQuery) (EventPage, error) {
	if q.Limit == 0 {
		q.Limit = 100
	}
	if q.Limit < 1 || q.Limit > MaxEventLimit {
		return EventPage{}, inputErrorf("limit %d: use 1 to %d", q.Limit, MaxEventLimit)
	}
	if q.Cursor == "" { // a later page was checked with the first
		if err := m.checkFleetEventFilter(ctx, q); err != nil {
			return EventPage{}, err
		}
	}
	f := store.EventFilter{Type: journal.Type(q.Type), Project: q.Project, Projects: q.Projects, Since: q.Since, Limit: q.Limit + 1,
		Hosts: q.Hosts, AllHosts: q.AllHosts}
	if q.Cursor != "" {
		id, err := decodeCursor(q.Cursor)
		if err != nil {
			return EventPage{}, err
		}
		f.BeforeID = id
	}
	evs, err := m.Store.Events(ctx, f)
	if err != nil {
		return EventPage{}, fmt.Errorf("read the journal: %w", err)
	}
	page := EventPage{Events: evs}
	if len(evs) > q.Limit {
		page.Events = evs[:q.Limit]
		page.Next = encodeCursor(page.Events[q.Limit-1].ID)
	}
	if page.Events == nil {
		page.Events = []Event{}
	}
	return page, nil
}

// DeletionOf reads ev as one deletion's record: key is shared by the
// deletion's pending record and the record that settles it, pending says
// which ev is; ok is false for any other or unreadable record.
func DeletionOf(ev Event) (key string, pending, ok bool) {
	if ev.Type != journal.TypeEvicted {
		return "", false, false
	}
	p, err := ev.Decode()
	r, isEvicted := p.(journal.Evicted)
	if err != nil || !isEvicted {
		return "", false, false
	}
	return fmt.Sprint(r.SweepID, "|", r.DeletionID, "|", r.Path, "|", r.Holder), r.State == journal.StatePending, true
}

// SettledDeletions drops the pending record of every deletion whose
// settling record is in evs (newest first): a listing shows a deletion
// once, with its final state.
func SettledDeletions(evs []Event) []Event {
	settled := map[string]bool{}
	var out []Event
	for _, ev := range evs {
		if k, pending, ok := DeletionOf(ev); ok {
			if pending && settled[k] {
				continue
			}
			if !pending {
				settled[k] = true
			}
		}
		out = append(out, ev)
	}
	return out
}
