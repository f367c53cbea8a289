package figures

import (
	"reflect"
	"testing"
)

func TestOverLimitsNamesWhatATreeAlreadyPasses(t *testing.T) {
	for _, tc := range []struct {
		name string
		tree TreeStatus
		want []LimitWarning
	}{
		{"under every limit", TreeStatus{Area: "cache", UsedBytes: 10, BytesSoft: 20, BytesHard: 30}, nil},
		{"at the hard limit: not the soft one too", TreeStatus{Area: "workspace", UsedBytes: 30, BytesSoft: 20, BytesHard: 30},
			[]LimitWarning{{Project: "omni", Area: "workspace", Resource: LimitBytes, Kind: LimitHard, Used: 30, Limit: 30}}},
		{"over the soft limit only", TreeStatus{Area: "workspace", UsedInodes: 5, InodesSoft: 4},
			[]LimitWarning{{Project: "omni", Area: "workspace", Resource: LimitInodes, Kind: LimitSoft, Used: 5, Limit: 4}}},
		{"zero is no limit", TreeStatus{Area: "scratch", UsedBytes: 5}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := OverLimits(Project{Name: "omni", Trees: []TreeStatus{tc.tree}})
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
