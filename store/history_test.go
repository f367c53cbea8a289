package store

import (
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
)

// A batch of walks keeps a tree whole only when the newest kept of that
// tree is HistoryEvery older and differs from it, each tree of the batch
// judged against its own newest, on both drivers.
func TestStoreWalksKeepsHistoryEveryIntervalAndOnlyWhenChanged(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		t0 := time.Now().Add(-24 * time.Hour).Truncate(time.Second)
		keys := []TreeKey{{Project: "a", Area: "workspace"}, {Project: "b", Area: "workspace"}}
		walk := func(at time.Time, trees ...string) {
			t.Helper()
			var recs []WalkRecord
			for i, k := range keys {
				recs = append(recs, WalkRecord{Snapshot: Snapshot{Project: k.Project, Area: k.Area, At: at}, Tree: []byte(trees[i])})
			}
			if err := s.StoreWalks(ctx, recs, 30*24*time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		// keptAt: the tree kept as of at is the one walked at want.
		keptAt := func(k TreeKey, at, want time.Time, why string) {
			t.Helper()
			got, ok, err := s.TreeAt(ctx, k, at)
			if err != nil || !ok || !got.At.Equal(want) {
				t.Errorf("%s: %s as of %s: kept %v (%v, %v), want the walk of %s", why, k.Project, at.Sub(t0), got.At.Sub(t0), ok, err, want.Sub(t0))
			}
		}
		h := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }
		walk(h(0), "A0", "B0")
		walk(h(1), "A1", "B1") // within HistoryEvery of the last kept: not kept
		keptAt(keys[0], h(1), h(0), "a change within the interval")
		walk(h(4), "A0", "B4") // a unchanged since h(0), b changed
		keptAt(keys[0], h(4), h(0), "an unchanged tree")
		keptAt(keys[1], h(4), h(4), "a changed tree past the interval")
		walk(h(5), "A5", "B5") // a: 5h after its last kept, changed; b: 1h after its own
		keptAt(keys[0], h(5), h(5), "a changed tree past the interval")
		keptAt(keys[1], h(5), h(4), "a change within its own interval")
	})
}
