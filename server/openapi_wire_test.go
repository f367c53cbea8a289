package server

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	apiv1 "github.com/xfsq/xfsq/api/v1"
)

// specSchemas are the description's component schemas of objects, each
// with the wire type it describes; requests are the ones a client sends,
// whose members the server does not require all of.
var specSchemas = map[string]struct {
	wire    any
	request bool
}{
	"Problem": {apiv1.Problem{}, false}, "Healthz": {apiv1.Healthz{}, false}, "Ready": {apiv1.Ready{}, false}, "Backend": {apiv1.Backend{}, false},
	"ProjectRecord": {apiv1.ProjectRecord{}, false}, "TreeStatus": {apiv1.TreeStatus{}, false}, "Project": {apiv1.Project{}, false},
	"Admission": {apiv1.Admission{}, false}, "LeaseStatus": {apiv1.Lease{}, false},
	"TreeDiff": {apiv1.TreeDiff{}, false}, "PathChange": {apiv1.PathChange{}, false},
	"ProjectHistory": {apiv1.ProjectHistory{}, false}, "TreeHistory": {apiv1.TreeHistory{}, false}, "HistoryPoint": {apiv1.HistoryPoint{}, false},
	"DiskHistory": {apiv1.DiskHistory{}, false}, "Event": {apiv1.Event{}, false}, "EventPage": {apiv1.EventPage{}, false},
	"PurgePlan": {apiv1.PurgePlan{}, false}, "LeftInPlace": {apiv1.Left{}, false},
	"Purged": {apiv1.Purged{}, false}, "RemoveResult": {apiv1.RemoveResult{}, false},
	"DiskPath": {apiv1.DiskPath{}, false}, "DiskPart": {apiv1.DiskPart{}, false},
	"CPUPart": {apiv1.CPUPart{}, false}, "MemoryPart": {apiv1.MemoryPart{}, false},
	"DockerPart": {apiv1.DockerPart{}, false}, "QuotaPart": {apiv1.QuotaPart{}, false},
	"StorePart": {apiv1.StorePart{}, false}, "HealthReport": {apiv1.Health{}, false}, "HealthThresholds": {apiv1.HealthThresholds{}, false},
	"TopPath": {apiv1.TopPath{}, false}, "Growth": {apiv1.Growth{}, false},
	"ProjectOverview": {apiv1.ProjectOverview{}, false}, "OverviewDisk": {apiv1.OverviewDisk{}, false},
	"Overview": {apiv1.Overview{}, false}, "OverviewSummary": {apiv1.OverviewSummary{}, false}, "Node": {apiv1.Node{}, false},
	"TopFile": {apiv1.File{}, false}, "TreeStorage": {apiv1.TreeStorage{}, false},
	"ProjectStorage": {apiv1.ProjectStorage{}, false}, "FileEntry": {apiv1.Entry{}, false},
	"Listing": {apiv1.Listing{}, false}, "PutResult": {apiv1.PutResult{}, false},
	"FileRemoveResult": {apiv1.FileRemoveResult{}, false}, "SweepSkip": {apiv1.SweepSkip{}, false},
	"SweepOverSoft": {apiv1.OverSoft{}, false}, "PlannedEntry": {apiv1.PlannedEntry{}, false},
	"SweepPlan": {apiv1.SweepPlan{}, false}, "SweepDeleted": {apiv1.Deleted{}, false},
	"SweepResult": {apiv1.SweepResult{}, false},
	"Limits":      {apiv1.Limits{}, true}, "AddRequest": {apiv1.AddRequest{}, true},
	"SetRequest": {apiv1.SetRequest{}, true}, "LeaseRequest": {apiv1.LeaseRequest{}, true},
	"SweepRequest": {apiv1.SweepRequest{}, true},
	"FleetHost":    {apiv1.FleetHost{}, false}, "FleetHosts": {apiv1.FleetHosts{}, false},
	"FleetTree": {apiv1.FleetTree{}, false}, "FleetStorage": {apiv1.FleetStorage{}, false},
	"AbandonedDeletion": {apiv1.AbandonedDeletion{}, false}, "HostRetired": {apiv1.HostRetired{}, false},
	"RetireRequest": {apiv1.RetireRequest{}, true},
	"Report":        {apiv1.Report{}, false}, "ReportPromise": {apiv1.ReportPromise{}, false}, "TreeWarning": {apiv1.TreeWarning{}, false}, "Unowned": {apiv1.Unowned{}, false},
	"Setting": {apiv1.Setting{}, false}, "SettingChange": {apiv1.SettingChange{}, false},
	"SetSettingRequest": {apiv1.SetSettingRequest{}, true}, "Finding": {apiv1.Finding{}, false}, "Doctor": {apiv1.Doctor{}, false},
}

// TestOpenAPISchemasAreTheWireTypes holds openapi.json's schemas to the Go
// wire types: each object schema's properties are exactly the type's JSON
// members, and an answer's required members exactly those it always has
// (no omitempty); every object schema has its type.
func TestOpenAPISchemasAreTheWireTypes(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Type       any                        `json:"type"`
				Properties map[string]json.RawMessage `json:"properties"`
				Required   []string                   `json:"required"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	for name, s := range doc.Components.Schemas {
		want, ok := specSchemas[name]
		if !ok {
			if s.Properties != nil {
				t.Errorf("schema %s has no wire type in specSchemas: declare it in api/v1 and list it", name)
			}
			continue
		}
		all, always := jsonMembers(reflect.TypeOf(want.wire))
		props := slicesSorted(s.Properties)
		if !slices.Equal(props, all) {
			t.Errorf("schema %s has properties %v; %T has JSON members %v", name, props, want.wire, all)
		}
		if required := slices.Sorted(slices.Values(s.Required)); !want.request && !slices.Equal(required, always) {
			t.Errorf("schema %s requires %v; %T always has %v (the others omitempty)", name, required, want.wire, always)
		}
	}
	for name := range specSchemas {
		if _, ok := doc.Components.Schemas[name]; !ok {
			t.Errorf("specSchemas lists %s, which openapi.json no longer has", name)
		}
	}
}

func slicesSorted(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// jsonMembers are t's top-level JSON member names, sorted, and those of
// them without omitempty (embedded structs flattened).
func jsonMembers(t reflect.Type) (all, always []string) {
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			a, b := jsonMembers(f.Type)
			all, always = append(all, a...), append(always, b...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		all = append(all, name)
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			always = append(always, name)
		}
	}
	slices.Sort(all)
	slices.Sort(always)
	return all, always
}
