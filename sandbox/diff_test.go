package sandbox_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

const mb = 1 << 20

// node is a directory of a stored tree.
func node(path string, size uint64, kids ...*inventory.Node) *inventory.Node {
	return &inventory.Node{Path: path, SizeBytes: size, Children: kids}
}

// storeSnapshot stores root as the workspace's snapshot at at.
func storeSnapshot(t testing.TB, r *fixture.Root, project string, at time.Time, root *inventory.Node, files ...inventory.File) {
	t.Helper()
	err := sandbox.TestStore(r.Manager).InTx(r.Ctx, func(tx *store.Tx) error {
		return tx.AddSnapshot(r.Ctx, store.Snapshot{Project: project, Area: "workspace", At: at, SizeBytes: root.SizeBytes, KernelBytes: -1},
			inventory.AppendStored(nil, root, files), 35*24*time.Hour)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func paths(cs []sandbox.PathChange) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s %+d", c.Path, c.ChangeBytes/mb))
	}
	return out
}

// What changed in a day, from the stored snapshots: the directories that
// grew (the deepest carrying each growth), the new and gone top-level
// entries; a span no kept snapshot covers is refused, naming the oldest.
func TestDiff(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(0, "omni")
		now := time.Now()
		storeSnapshot(t, r, "omni", now.Add(-26*time.Hour), node(".", 14*mb, node("src", 10*mb, node("src/gen", 5*mb, node("src/gen/out", 5*mb)), node("src/lib", 5*mb)), node("old", 3*mb)),
			inventory.File{Path: "top.bin", SizeBytes: mb})
		storeSnapshot(t, r, "omni", now.Add(-time.Hour), node(".", 35*mb, node("src", 33*mb, node("src/gen", 25*mb, node("src/gen/out", 25*mb)), node("src/lib", 8*mb)), node("new", 2*mb)))
		d, err := r.Manager.Diff(r.Ctx, "omni", sandbox.DiffOptions{})
		if err != nil {
			t.Fatal(err)
		}
		check := func(what string, got, want []string) {
			t.Helper()
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: %q, want %q", what, got, want)
			}
		}
		// src/gen's growth is all src/gen/out's: the deeper path says it.
		check("grew", paths(d.Grew), []string{"src +23", "src/gen/out +20", "src/lib +3", "new +2"})
		check("shrank", paths(d.Shrank), []string{"old -3"})
		check("new", paths(d.New), []string{"new +2"})
		check("gone", paths(d.Gone), []string{"old -3", "top.bin -1"})
		if d.ChangeBytes != 21*mb || d.FromBytes != 14*mb || !d.FromAt.Equal(now.Add(-26*time.Hour).Truncate(time.Microsecond).UTC()) {
			t.Errorf("totals: %+v", d)
		}
		if d, err := r.Manager.Diff(r.Ctx, "omni", sandbox.DiffOptions{Top: 1}); err != nil || len(d.Grew) != 1 || len(d.Gone) != 1 {
			t.Errorf("--top 1: %+v %v", d, err)
		}
		_, err = r.Manager.Diff(r.Ctx, "omni", sandbox.DiffOptions{Since: 7 * 24 * time.Hour})
		if errkind.Of(err) != errkind.NotFound || !strings.Contains(err.Error(), "the oldest kept is from") {
			t.Errorf("a week back with a day kept: %v", err)
		}
		if _, err := r.Manager.Diff(r.Ctx, "omni", sandbox.DiffOptions{Top: -1}); errkind.Of(err) != errkind.Input {
			t.Errorf("top -1: %v", err)
		}
	})
}
