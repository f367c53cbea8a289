package journal

import (
	"encoding/json"
	"reflect"
	"testing"
)

// samples are payloads of every type as xfsq journals them today, in the
// form the stored journal holds: each decodes to its struct and encodes
// back to the same JSON, so no record changes shape on the way through.
var samples = []struct {
	typ  Type
	json string
}{
	{TypeProjectAdded, `{"backend":"fallback","trees":[{"project":"omni","area":"workspace","path":"projects/omni","backend":"fallback",` +
		`"fs_uuid":"u-1","project_id":100001,"limits":{"bytes_soft":512,"bytes_hard":1024,"inodes_soft":0,"inodes_hard":100}}]}`},
	{TypeProjectRemoved, `{"project":"omni","purged":true,"forced":true,"held_leases":["run-1"],"ended_leases":["run-1"],"kept_ids":[],` +
		`"left":null,"purged_trees":[{"path":"projects/omni","state":"partial","removed_entries":3,"freed_bytes":4096,"freed_inodes":3,` +
		`"left":[{"path":"projects/omni/mnt","reason":"a mount point"}]}]}`},
	{TypeProjectRemoved, `{"project":"omni","purged":false,"ended_leases":[],"kept_ids":["100001 (projects/omni)"],"left":["projects/omni"],"purged_trees":null}`},
	{TypeQuotaChanged, `{"area":"cache","project_id":100002,"old":{"bytes_soft":0,"bytes_hard":0,"inodes_soft":0,"inodes_hard":0},` +
		`"new":{"bytes_soft":0,"bytes_hard":2097152,"inodes_soft":0,"inodes_hard":5}}`},
	{TypeEvicted, `{"sweep_id":"sw-1","area":"cache","path":"cache/omni/old","freed_bytes":8192,"reason":"older than 7d","policy":"cache_max_age",` +
		`"state":"partial","error":"boom","removed_entries":2,"freed_inodes":2,"left":[{"path":"cache/omni/old/m","reason":"a mount point"}],` +
		`"holder":"12.34@h","deletion_id":"d-1","recovered":true}`},
	{TypeEvicted, `{"area":"workspace","path":"projects/omni/x","freed_bytes":0,"reason":"files rm","policy":"files rm","state":"pending",` +
		`"removed_entries":0,"freed_inodes":0}`},
	{TypeQuotaExceeded, `{"area":"workspace","used_bytes":2048,"used_inodes":0,"bytes_soft":1024,"inodes_soft":0,"bytes_hard":0,"inodes_hard":0}`},
	{TypeQuotaExceeded, `{"area":"cache","used_bytes":2048,"bytes_soft":1024,"sweep_id":"sw-1"}`},
	{TypeQuotaExceeded, `{"area":"workspace","limit":"bytes_hard","limit_value":4096,"used_bytes":4096,"used_inodes":3,"bytes_soft":0,` +
		`"inodes_soft":0,"bytes_hard":4096,"inodes_hard":0,"seen_by":"kernel"}`},
	{TypeQuotaExceeded, `{"area":"workspace","limit":"bytes_soft","limit_value":1024,"used_bytes":2048,"used_inodes":3,"bytes_soft":1024,` +
		`"inodes_soft":0,"bytes_hard":0,"inodes_hard":0,"grace_ends_at":"2026-12-08T12:00:00Z","seen_by":"walk"}`},
	{TypeQuotaOK, `{"area":"workspace","limit":"bytes_soft","used_bytes":512,"used_inodes":3,"limit_value":1024,` +
		`"exceeded_at":"2026-12-01T12:00:00Z","seen_by":"admission"}`},
	{TypeSnapshot, `{"trees":[{"project":"omni","area":"cache","size_bytes":4096,"total_files":1,"partial":true,"error":"walk: boom",` +
		`"duration_seconds":0.25}],"free_bytes":1048576,"failed":1}`},
	{TypeSnapshot, `{"trees":[],"free_bytes":0,"failed":0}`},
	{TypeSwept, `{"sweep_id":"sw-1","freed_bytes":8192,"evicted_entries":2,"per_policy":{"cache_max_age":2},` +
		`"skipped":[{"project":"omni","path":"cache/omni/busy","reason":"leased"}],"duration_seconds":1.5,"projects":["omni"],"plan_id":"pl-1"}`},
	{TypeSwept, `{"sweep_id":"sw-2","freed_bytes":0,"evicted_entries":0,"per_policy":{},"skipped":null,"duration_seconds":0.01,"projects":null}`},
	{TypeSettingChanged, `{"key":"sweep_interval","old":"","old_source":"default","new":"1h"}`},
	{TypeSettingChanged, `{"key":"sweep_interval","old":"1h","old_source":"stored","new":"6h","new_source":"default","reset":"true"}`},
	{TypeRepaired, `{"kind":"missing-directory","project":"omni","area":"cache","path":"cache/omni","project_id":100002,` +
		`"detail":"the tree is gone","fix":"recreate it","fixed":true}`},
	{TypeRepaired, `{"kind":"interrupted-deletion","detail":"d","fix":"f","fixed":false,"error":"it failed"}`},
	{TypeRootInitialised, `{"root":"/srv/sandbox","adopted":["legacy"]}`},
	{TypeRootInitialised, `{"root":"/srv/sandbox","adopted":[]}`},
	{TypeHostRetired, `{"retired_host":"sandbox-7","abandoned_deletions":2}`},
	{TypeEvicted, `{"sweep_id":"sw-1","area":"cache","path":"cache/omni/old","freed_bytes":0,"reason":"older than 7d","policy":"cache_max_age",` +
		`"state":"abandoned","error":"host sandbox-7 was retired with this deletion pending: whether the entry went is unknown",` +
		`"removed_entries":0,"freed_inodes":0}`},
	{TypeRootBound, `{"root":"/srv/sandbox","root_id":"3f1c","fs_id":"xfs:u-1","why":"init"}`},
	{TypeRootBound, `{"root":"/srv/new","root_id":"9a2b","why":"takeover","took_from":{"root":"/srv/sandbox","root_id":"3f1c","fs_id":"xfs:u-1"}}`},
	{TypeHolderTakenOver, `{"what":"sweep_lock","name":"omni","from":"12.34@a/op-1","by":"56.78@b/op-2","why":"its lease expired",` +
		`"expired_at":"2025-01-02T03:04:05Z"}`},
	{TypeHolderTakenOver, `{"what":"pass","name":"snapshot","from":"12.34@b/op-1","by":"56.78@b/op-2","why":"its process no longer runs"}`},
	{TypeJournalPruned, `{"before":"2026-01-01T00:00:00Z","retention":"90d","events":1200,"batches":3,"kept_pending":1}`},
}

func TestSamplesKeepTheirShape(t *testing.T) {
	seen := map[Type]bool{}
	for _, s := range samples {
		seen[s.typ] = true
		p, err := Decode(s.typ, []byte(s.json))
		if err != nil {
			t.Errorf("%s: %v", s.typ, err)
			continue
		}
		if p.Type() != s.typ {
			t.Errorf("%s decoded as a %s payload", s.typ, p.Type())
		}
		again, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if !sameJSON(t, again, []byte(s.json)) {
			t.Errorf("%s changed shape:\n got %s\nwant %s", s.typ, again, s.json)
		}
	}
	for _, typ := range Types {
		if !seen[typ] {
			t.Errorf("no sample of %s", typ)
		}
	}
}

func sameJSON(t *testing.T, a, b []byte) bool {
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

// Records journalled before the field names of docs/design/README.md#output-conventions are never
// rewritten: they decode with their figures under today's names.
func TestOldRecordsDecode(t *testing.T) {
	cases := []struct {
		typ  Type
		json string
		want Payload
	}{
		{TypeEvicted, `{"sweep_id":"s","area":"cache","path":"cache/a/x","bytes":8192,"state":"pending"}`,
			Evicted{SweepID: "s", Area: "cache", Path: "cache/a/x", Bytes: 8192, State: StatePending}},
		{TypeSwept, `{"sweep_id":"s","bytes_freed":4096,"entries":3,"duration_ms":1500,"per_policy":{"p":3},"projects":["a"]}`,
			Swept{SweepID: "s", FreedBytes: 4096, EvictedEntries: 3, DurationSeconds: 1.5, PerPolicy: map[string]int{"p": 3}, Projects: []string{"a"}}},
		{TypeSnapshot, `{"trees":[{"project":"a","area":"cache","size_bytes":10,"total_files":1}],"free_bytes":5,"failed":0}`,
			Snapshot{Trees: []SnapshotTree{{Project: "a", Area: "cache", SizeBytes: 10, Files: 1}}, FreeBytes: 5}},
	}
	for _, c := range cases {
		got, err := Decode(c.typ, []byte(c.json))
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %s:\n got %#v (%v)\nwant %#v", c.typ, c.json, got, err, c.want)
		}
	}
}

// A record Decode cannot read is an error naming its type, never a panic
// or a zero payload taken for a real one.
func TestDecodeRefuses(t *testing.T) {
	for _, c := range []struct {
		typ  Type
		json string
	}{
		{"storage.unknown", `{}`},
		{TypeEvicted, `{"freed_bytes":"8192"}`},
		{TypeSwept, `[1,2]`},
		{TypeSettingChanged, `{"reset":"yes"}`},
		{TypeProjectAdded, `not json`},
	} {
		if p, err := Decode(c.typ, []byte(c.json)); err == nil {
			t.Errorf("%s %s: decoded as %#v, want an error", c.typ, c.json, p)
		}
	}
}

// An event lists its payload's fields beside its own, the payload whole
// too; its own fields win a clash.
func TestEventJSON(t *testing.T) {
	ev := Event{ID: 7, Type: TypeEvicted, Host: "h", Project: "omni", Actor: "a",
		Payload: json.RawMessage(`{"path":"cache/omni/x","id":99,"bytes":1}`)}
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got["path"] != "cache/omni/x" || got["id"] != 7.0 || got["bytes"] != 1.0 || got["type"] != "storage.evicted" {
		t.Errorf("event JSON %s", data)
	}
	if p, _ := got["payload"].(map[string]any); p["id"] != 99.0 {
		t.Errorf("payload not kept whole: %s", data)
	}
}

func TestTypes(t *testing.T) {
	for _, typ := range Types {
		if !typ.Known() {
			t.Errorf("%s not known", typ)
		}
		if _, err := Decode(typ, []byte(`{}`)); err != nil {
			t.Errorf("%s: an empty payload: %v", typ, err)
		}
	}
	if Type("project.add").Known() {
		t.Error("a typo is known")
	}
}
