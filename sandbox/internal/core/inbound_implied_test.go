package core

import (
	"slices"
	"testing"

	"github.com/xfsq/xfsq/area"
)

func TestImpliedProjectsIsTheInboundTreeAlone(t *testing.T) {
	for _, tc := range []struct {
		areas []string
		want  []string
	}{
		{[]string{area.Inbound}, []string{RootOwner}},
		{[]string{area.Inbound, area.Cache}, nil},
		{[]string{area.Cache}, nil},
		{[]string{""}, nil},
		{nil, nil},
	} {
		if got := ImpliedProjects(tc.areas); !slices.Equal(got, tc.want) {
			t.Errorf("ImpliedProjects(%q) = %q, want %q", tc.areas, got, tc.want)
		}
	}
}
