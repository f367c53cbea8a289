package core

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/store"
)

// A long-lived manager on a fallback root sees what another manager (another
// process, on the same root and store) did after it opened: it sets limits
// on a project the other added and reads limits the other changed.
func TestFallbackSeesOtherManagers(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	long, _ := managerWithOmni(t, root)
	if long.IsXFS() {
		t.Fatal("the test root is on XFS; this test is of the fallback backend")
	}
	st, err := store.Open(ctx, filepath.Join(root, StateDir, "xfsq.db"), "host-a")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	other, err := Open(ctx, Options{Root: root, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	plant(t, other, "late")
	hard := uint64(3 << 30)
	p, err := long.Set(ctx, "late", area.Workspace, LimitChange{BytesHard: &hard})
	if err != nil {
		t.Fatalf("set limits on a project another manager added: %v", err)
	}
	for _, tr := range p.Trees {
		if tr.Area == area.Workspace && tr.BytesHard != hard {
			t.Errorf("after set: %+v", tr)
		}
	}
	soft := uint64(1 << 30)
	if _, err := other.Set(ctx, "omni", area.Workspace, LimitChange{BytesSoft: &soft}); err != nil {
		t.Fatal(err)
	}
	ws, err := long.Tree(ctx, "omni", area.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	if q, err := long.Backend.Get(ws.ProjectID); err != nil || q.BytesSoft != soft {
		t.Errorf("limits another manager set, read by the backend: %+v, %v", q.Limits, err)
	}
}
