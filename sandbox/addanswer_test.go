package sandbox_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/sandbox"
)

// An add answers what a Show just after it reads, without reading the
// project back (the read cost an add ~9 of its statements): the row's time
// as the store keeps it, the trees in the store's order, each tree's
// usage, limits and grace. The adopted workspace is already over the soft
// limit given, so its grace is in the answer too.
func TestAddAnswersWhatShowReads(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		m := r.Manager
		ws := filepath.Join(m.Root, area.TreePath("adopted", area.Workspace))
		if err := os.MkdirAll(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "big"), make([]byte, 256<<10), 0o644); err != nil {
			t.Fatal(err)
		}
		// The statements an add sends, each a round trip to PostgreSQL (22
		// were 43-115 ms with it 1 ms away): BEGIN, the name's and the IDs'
		// locks with the settings read, the project, IDs and trees in one
		// statement, COMMIT; then the baselines, ready, the journal record
		// and the answer's reads in one. The first add of a process also
		// records its lease (two more).
		most := map[string]int64{"postgres": 5, "sqlite": 16}[sandbox.TestStore(m).Driver()]
		for _, c := range []struct {
			name  string
			o     sandbox.AddOptions
			lease int64
		}{
			{"fresh", sandbox.AddOptions{Cache: sandbox.LimitChange{BytesSoft: fixture.Size(1 << 20), InodesHard: fixture.Size(100)}}, 2},
			{"adopted", sandbox.AddOptions{Workspace: sandbox.LimitChange{BytesSoft: fixture.Size(64 << 10), BytesHard: fixture.Size(10 << 20)}}, 0},
		} {
			before := sandbox.TestStore(m).Statements()
			added, err := m.Add(r.Ctx, c.name, c.o)
			if err != nil {
				t.Fatal(err)
			}
			stmts := sandbox.TestStore(m).Statements() - before
			sandbox.ForgetReads(m)
			shown, err := m.Show(r.Ctx, c.name)
			if err != nil {
				t.Fatal(err)
			}
			if len(added.Trees) != len(area.OfProject) {
				t.Fatalf("%s: %d trees", c.name, len(added.Trees))
			}
			for i := range shown.Trees { // how old a figure is moves with the clock
				added.Trees[i].UsageAgeSeconds, shown.Trees[i].UsageAgeSeconds = nil, nil
			}
			added.Warnings = nil
			if !reflect.DeepEqual(added, shown) {
				t.Errorf("%s: add answered\n%+v\nshow reads\n%+v", c.name, added, shown)
			}
			if stmts > most+c.lease {
				t.Errorf("%s: the add sent %d statements, want at most %d", c.name, stmts, most+c.lease)
			}
			t.Logf("%s: %d statements", c.name, stmts)
			if ws := workspace(t, shown); c.name == "adopted" && ws.BytesGraceEndsAt == nil {
				t.Errorf("adopted: no grace end over the soft limit: %+v", ws)
			}
		}
	})
}
