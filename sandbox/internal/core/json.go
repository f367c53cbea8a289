package core

import (
	"strconv"

	"github.com/xfsq/xfsq/internal/jsonfmt"
)

// backendJSON is a Backend's JSON and what it was made of: every answer
// carries the backend up to four times, and the fallback's reason is a
// paragraph.
type backendJSON struct {
	kind, reason string
	enforced     bool
	json         []byte
}

// withJSON is k with its JSON kept beside it.
func (k Backend) withJSON() Backend {
	k.encoded = nil
	k.encoded = &backendJSON{kind: k.Kind, reason: k.Reason, enforced: k.Enforced, json: k.appendJSON(nil)}
	return k
}

// AppendBackendJSON appends k's JSON, as encoding/json writes it, from
// the JSON kept beside it while its fields are what it was made of.
func AppendBackendJSON(b []byte, k Backend) []byte { return k.appendJSON(b) }

func (k Backend) appendJSON(b []byte) []byte {
	// Kept JSON only while the fields are what it was made of: a copy
	// whose fields were changed is encoded afresh.
	if e := k.encoded; e != nil && e.kind == k.Kind && e.enforced == k.Enforced && e.reason == k.Reason {
		return append(b, e.json...)
	}
	b = append(b, `{"kind":`...)
	b = appendJSONString(b, k.Kind)
	b = append(b, `,"enforced":`...)
	b = strconv.AppendBool(b, k.Enforced)
	if k.Reason != "" {
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, k.Reason)
	}
	return append(b, '}')
}

// appendJSONString quotes s as encoding/json does without HTML escaping
// (an admission message always holds the project's name in quotes).
func appendJSONString(b []byte, s string) []byte { return jsonfmt.AppendString(b, s) }
