package readmodel

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/xfsq/xfsq/internal/jsonfmt"
	"github.com/xfsq/xfsq/sandbox/internal/core"
)

// AppendAdmissionJSON appends a's JSON, byte for byte what encoding/json's Encoder
// writes with SetEscapeHTML(false), newline included. A server answers
// admission before every run of every project, and reflection over three
// trees was half of a cached answer's cost (docs/benchmarks.md);
// TestAppendJSONIsEncodingJSON holds the two equal field by field.
func AppendAdmissionJSON(b []byte, a Admission) []byte {
	b = append(b, `{"project":`...)
	b = appendJSONString(b, a.Project)
	b = append(b, `,"decision":`...)
	b = appendJSONString(b, string(a.Decision))
	b = append(b, `,"message":`...)
	b = appendJSONString(b, a.Message)
	b = append(b, `,"backend":`...)
	b = core.AppendBackendJSON(b, a.Backend)
	b = append(b, `,"trees":`...)
	if a.Trees == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range a.Trees {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendTreeStatus(b, &a.Trees[i])
		}
		b = append(b, ']')
	}
	return append(b, "}\n"...)
}

// appendTreeStatus appends t's JSON, as encoding/json writes it.
func appendTreeStatus(b []byte, t *core.TreeStatus) []byte {
	b = append(b, `{"project":`...)
	b = appendJSONString(b, t.Project)
	b = append(b, `,"area":`...)
	b = appendJSONString(b, t.Area)
	b = append(b, `,"path":`...)
	b = appendJSONString(b, t.Path)
	b = append(b, `,"project_id":`...)
	b = strconv.AppendUint(b, uint64(t.ProjectID), 10)
	if t.Backend != (core.Backend{}) { // omitzero: an answer that gives it once
		b = append(b, `,"backend":`...)
		b = core.AppendBackendJSON(b, t.Backend)
	}
	for _, f := range [...]struct {
		name string
		v    uint64
	}{{`,"used_bytes":`, t.UsedBytes}, {`,"used_inodes":`, t.UsedInodes}, {`,"bytes_soft":`, t.BytesSoft},
		{`,"bytes_hard":`, t.BytesHard}, {`,"inodes_soft":`, t.InodesSoft}, {`,"inodes_hard":`, t.InodesHard}} {
		b = append(b, f.name...)
		b = strconv.AppendUint(b, f.v, 10)
	}
	b = append(b, `,"percent":`...)
	b = jsonfmt.AppendFloat(b, t.Percent)
	if t.BytesGraceEndsAt != nil {
		b = append(b, `,"bytes_grace_ends_at":`...)
		b = appendJSONTime(b, *t.BytesGraceEndsAt)
	}
	if t.InodesGraceEndsAt != nil {
		b = append(b, `,"inodes_grace_ends_at":`...)
		b = appendJSONTime(b, *t.InodesGraceEndsAt)
	}
	if t.Drift != "" {
		b = append(b, `,"drift":`...)
		b = appendJSONString(b, t.Drift)
	}
	for _, g := range [...]struct {
		name string
		v    *int64
	}{{`,"growth_24h_bytes":`, t.Growth24hBytes}, {`,"growth_7d_bytes":`, t.Growth7dBytes}} {
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
	if t.UsageWalkedAt != nil {
		b = append(b, `,"usage_walked_at":`...)
		b = appendJSONTime(b, *t.UsageWalkedAt)
	}
	if t.UsageAgeSeconds != nil {
		b = append(b, `,"usage_age_seconds":`...)
		b = jsonfmt.AppendFloat(b, *t.UsageAgeSeconds)
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
	if t.FullInSeconds != nil {
		b = append(b, `,"full_in_seconds":`...)
		b = jsonfmt.AppendFloat(b, *t.FullInSeconds)
	}
	if t.ReclaimableBytes != nil {
		b = append(b, `,"reclaimable_bytes":`...)
		b = strconv.AppendUint(b, *t.ReclaimableBytes, 10)
	}
	return append(b, '}')
}

// appendJSONString quotes s as encoding/json does without HTML escaping
// (an admission message always holds the project's name in quotes).
func appendJSONString(b []byte, s string) []byte { return jsonfmt.AppendString(b, s) }

// appendJSONTime is time.Time's MarshalJSON: RFC 3339 with nanoseconds.
func appendJSONTime(b []byte, t time.Time) []byte {
	if y := t.Year(); y < 0 || y > 9999 {
		out, err := json.Marshal(t) // fails as encoding/json does: no such time in JSON
		if err != nil {
			return append(b, "null"...)
		}
		return append(b, out...)
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}
