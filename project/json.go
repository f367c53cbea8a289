package project

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSON appends a's JSON, byte for byte what encoding/json's Encoder
// writes with SetEscapeHTML(false), newline included. A server answers
// admission before every run of every project, and reflection over three
// trees was half of a cached answer's cost (BENCHMARKS.md);
// TestAppendJSONIsEncodingJSON holds the two equal field by field.
func (a Admission) AppendJSON(b []byte) []byte {
	b = append(b, `{"project":`...)
	b = appendJSONString(b, a.Project)
	b = append(b, `,"decision":`...)
	b = appendJSONString(b, a.Decision)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, a.Message)
	b = append(b, `,"backend":`...)
	b = a.Backend.appendJSON(b)
	b = append(b, `,"trees":`...)
	if a.Trees == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range a.Trees {
			if i > 0 {
				b = append(b, ',')
			}
			b = a.Trees[i].appendJSON(b)
		}
		b = append(b, ']')
	}
	return append(b, "}\n"...)
}

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

func (t *TreeStatus) appendJSON(b []byte) []byte {
	b = append(b, `{"project":`...)
	b = appendJSONString(b, t.Project)
	b = append(b, `,"area":`...)
	b = appendJSONString(b, t.Area)
	b = append(b, `,"path":`...)
	b = appendJSONString(b, t.Path)
	b = append(b, `,"project_id":`...)
	b = strconv.AppendUint(b, uint64(t.ProjectID), 10)
	b = append(b, `,"backend":`...)
	b = t.Backend.appendJSON(b)
	for _, f := range [...]struct {
		name string
		v    uint64
	}{{`,"used_bytes":`, t.UsedBytes}, {`,"used_inodes":`, t.UsedInodes}, {`,"bytes_soft":`, t.BytesSoft},
		{`,"bytes_hard":`, t.BytesHard}, {`,"inodes_soft":`, t.InodesSoft}, {`,"inodes_hard":`, t.InodesHard}} {
		b = append(b, f.name...)
		b = strconv.AppendUint(b, f.v, 10)
	}
	b = append(b, `,"percent":`...)
	b = appendJSONFloat(b, t.Percent)
	if t.BytesGraceEnds != nil {
		b = append(b, `,"bytes_grace_ends_at":`...)
		b = appendJSONTime(b, *t.BytesGraceEnds)
	}
	if t.InodesGraceEnds != nil {
		b = append(b, `,"inodes_grace_ends_at":`...)
		b = appendJSONTime(b, *t.InodesGraceEnds)
	}
	if t.Drift != "" {
		b = append(b, `,"drift":`...)
		b = appendJSONString(b, t.Drift)
	}
	for _, g := range [...]struct {
		name string
		v    *int64
	}{{`,"growth_24h_bytes":`, t.Growth24h}, {`,"growth_7d_bytes":`, t.Growth7d}} {
		b = append(b, g.name...)
		if g.v == nil {
			b = append(b, "null"...)
		} else {
			b = strconv.AppendInt(b, *g.v, 10)
		}
	}
	b = append(b, `,"last_activity_at":`...)
	if t.LastActivityAt == nil {
		b = append(b, "null"...)
	} else {
		b = appendJSONTime(b, *t.LastActivityAt)
	}
	if t.UsageAsOf != nil {
		b = append(b, `,"usage_walked_at":`...)
		b = appendJSONTime(b, *t.UsageAsOf)
	}
	if t.UsageAgeSeconds != nil {
		b = append(b, `,"usage_age_seconds":`...)
		b = appendJSONFloat(b, *t.UsageAgeSeconds)
	}
	if t.Stale {
		b = append(b, `,"stale":true`...)
	}
	if t.WalkBytes != nil {
		b = append(b, `,"walk_bytes":`...)
		b = strconv.AppendUint(b, *t.WalkBytes, 10)
	}
	if t.Escape != "" {
		b = append(b, `,"escape":`...)
		b = appendJSONString(b, t.Escape)
	}
	return append(b, '}')
}

// appendJSONString quotes s as encoding/json does without HTML escaping;
// a string with anything to escape goes through encoding/json itself, so
// the rare name or message with such characters is still spelled its way.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			// Valid UTF-8 is written as it is, but for the two line
			// separators JavaScript minds; invalid bytes are replaced.
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 || r == '\u2028' || r == '\u2029' {
				return appendSlowJSON(b, s)
			}
			i += n
			continue
		}
		if c < 0x20 || c == '"' || c == '\\' {
			return appendSlowJSON(b, s)
		}
		i++
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendSlowJSON(b []byte, v any) []byte {
	out, err := json.Marshal(v) // a string or a time: never fails but for a year past 9999
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, out...)
}

// appendJSONTime is time.Time's MarshalJSON: RFC 3339 with nanoseconds.
func appendJSONTime(b []byte, t time.Time) []byte {
	if y := t.Year(); y < 0 || y > 9999 {
		return appendSlowJSON(b, t)
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendJSONFloat spells a float64 as encoding/json does: the shortest
// form that reads back the same, in exponent form only when very small or
// large. Figures are never NaN or infinite (encoding/json refuses those).
func appendJSONFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	abs, format := math.Abs(f), byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 as e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
