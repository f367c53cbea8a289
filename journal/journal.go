// Package journal holds the vocabulary of xfsq's journal: the type of every
// record, one payload struct per type, and the record as every shell and
// the API show it. The core encodes payloads of these types; the store
// keeps their JSON as written; shells decode and render them.
//
// It owns the JSON names of every payload, old and new: records are never
// rewritten, so a payload's decoder reads every form an earlier version
// journalled. It imports nothing of xfsq, so that anything (the store at
// the bottom, a client at the edge) may use it, and it never reads or
// writes a journal itself. No event name is spelled outside it.
package journal

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Type names what a record says happened.
type Type string

// The types the journal records.
const (
	TypeProjectAdded   Type = "project.added"
	TypeProjectRemoved Type = "project.removed"
	TypeQuotaChanged   Type = "quota.changed"
	// TypeEvicted is one deletion's record: pending before anything is
	// removed, then settled (done, partial or failed).
	TypeEvicted Type = "storage.evicted"
	// TypeQuotaExceeded is journalled once each time a tree reaches one of
	// its limits (soft or hard, bytes or inodes), by whoever saw it first.
	TypeQuotaExceeded Type = "storage.quota_exceeded"
	// TypeQuotaOK is journalled once when a tree is back under a limit it
	// had reached.
	TypeQuotaOK Type = "storage.quota_ok"
	// TypeSnapshot is journalled once per scheduled snapshot pass.
	TypeSnapshot Type = "storage.snapshot"
	// TypeSwept is journalled once at the end of each sweep.
	TypeSwept          Type = "storage.swept"
	TypeSettingChanged Type = "settings.changed"
	TypeRepaired       Type = "doctor.repaired"
	// TypeRootInitialised is a store's first record of a root (xfsq init).
	TypeRootInitialised Type = "root.initialised"
	// TypeHostRetired: an operator retired a host of the fleet; its
	// pending deletions were settled as abandoned just before.
	TypeHostRetired Type = "host.retired"
	// TypeRootBound is a root bound to its host name in the store: at
	// init, on a root's first open after the binding existed, or when a
	// root takes a host name over from another.
	TypeRootBound Type = "root.bound"
	// TypeHolderTakenOver is a lock or a pass taken from a holder that is
	// gone: its process ended, or its lease expired.
	TypeHolderTakenOver Type = "holder.taken_over"
	// TypeJournalPruned is journalled once per run of the journal's
	// retention (journal_retention), with what it pruned.
	TypeJournalPruned Type = "journal.pruned"
)

// Types is every type the journal records, in the order a shell lists them.
var Types = []Type{TypeProjectAdded, TypeProjectRemoved, TypeQuotaChanged, TypeEvicted, TypeQuotaExceeded, TypeQuotaOK,
	TypeSnapshot, TypeSwept, TypeSettingChanged, TypeRepaired, TypeRootInitialised, TypeHostRetired, TypeRootBound, TypeHolderTakenOver, TypeJournalPruned}

// Known reports whether t is a type the journal records.
func (t Type) Known() bool {
	for _, k := range Types {
		if t == k {
			return true
		}
	}
	return false
}

// TypeNames is Types joined for a message: "project.added, …".
func TypeNames() string {
	names := make([]string, len(Types))
	for i, t := range Types {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}

// Payload is what one record says: one struct of this package per Type.
type Payload interface {
	Type() Type
}

// Decode reads a payload of type t as any version of xfsq journalled it.
// It returns the payload struct of t (a value, never a pointer).
func Decode(t Type, raw []byte) (Payload, error) {
	switch t {
	case TypeProjectAdded:
		return decode[ProjectAdded](t, raw)
	case TypeProjectRemoved:
		return decode[ProjectRemoved](t, raw)
	case TypeQuotaChanged:
		return decode[QuotaChanged](t, raw)
	case TypeEvicted:
		return decode[Evicted](t, raw)
	case TypeQuotaExceeded:
		return decode[QuotaExceeded](t, raw)
	case TypeQuotaOK:
		return decode[QuotaOK](t, raw)
	case TypeSnapshot:
		return decode[Snapshot](t, raw)
	case TypeSwept:
		return decode[Swept](t, raw)
	case TypeSettingChanged:
		return decode[SettingChanged](t, raw)
	case TypeRepaired:
		return decode[Repaired](t, raw)
	case TypeRootInitialised:
		return decode[RootInitialised](t, raw)
	case TypeHostRetired:
		return decode[HostRetired](t, raw)
	case TypeRootBound:
		return decode[RootBound](t, raw)
	case TypeHolderTakenOver:
		return decode[HolderTakenOver](t, raw)
	case TypeJournalPruned:
		return decode[JournalPruned](t, raw)
	}
	return nil, fmt.Errorf("journal record of type %q: no version of xfsq writes that type", t)
}

func decode[P Payload](t Type, raw []byte) (Payload, error) {
	var p P
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("%s record: %w", t, err)
	}
	return p, nil
}

// Event is one journal record. Payload is its JSON as journalled (read it
// with Decode); Actor is a user or token name, never a secret.
type Event struct {
	ID      int64           `json:"id"`
	At      time.Time       `json:"recorded_at"`
	Type    Type            `json:"type"`
	Host    string          `json:"host"`
	Project string          `json:"project,omitempty"`
	Actor   string          `json:"actor"`
	Payload json.RawMessage `json:"payload"`
}

// Decode is the record's payload, typed.
func (e Event) Decode() (Payload, error) { return Decode(e.Type, e.Payload) }

// MarshalJSON adds the payload's own fields (path, bytes, state …) beside
// the event's, so `events --json` lists a record's fields at the top; the
// event's fields win a clash, and "payload" stays whole, as journalled.
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
