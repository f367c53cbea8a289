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

// Trees kept longer than HistoryRetention are dropped, all but the newest
// of them (the tree as it was when the retention begins), each tree of
// the batch against its own.
func TestStoreWalksDropsHistoryPastRetentionButItsNewest(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		t0 := time.Now().Add(-30 * 24 * time.Hour).Truncate(time.Second)
		h := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }
		a, b := TreeKey{Project: "a", Area: "workspace"}, TreeKey{Project: "b", Area: "workspace"}
		walk := func(at time.Time, trees map[TreeKey]string) {
			t.Helper()
			var recs []WalkRecord
			for _, k := range []TreeKey{a, b} {
				if tree, ok := trees[k]; ok {
					recs = append(recs, WalkRecord{Snapshot: Snapshot{Project: k.Project, Area: k.Area, At: at}, Tree: []byte(tree)})
				}
			}
			if err := s.StoreWalks(ctx, recs, 60*24*time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		oldest := func(k TreeKey, want time.Time, why string) {
			t.Helper()
			if got, err := s.OldestTree(ctx, k); err != nil || !got.Equal(want) {
				t.Errorf("%s: %s's oldest kept tree is from %v (%v), want %v", why, k.Project, got.Sub(t0), err, want.Sub(t0))
			}
		}
		walk(h(0), map[TreeKey]string{a: "A0", b: "B0"})
		walk(h(4), map[TreeKey]string{a: "A4", b: "B4"})
		walk(h(8), map[TreeKey]string{b: "B8"})
		// 8 days and 6 hours on: the retention begins at h(6). a's newest
		// before it is h(4): h(0) goes. b's is h(4) too, but b keeps
		// nothing new, so nothing of b's is judged.
		walk(h(8*24+6), map[TreeKey]string{a: "A-late", b: "B8"})
		oldest(a, h(4), "past the retention")
		oldest(b, h(0), "a tree that kept nothing new")
		if _, ok, err := s.TreeAt(ctx, a, h(1)); err != nil || ok {
			t.Errorf("a's tree as of h(1): ok %v (%v), want none kept that old", ok, err)
		}
		// b changes: its retention is judged too, h(4) is its newest before h(6).
		walk(h(8*24+6), map[TreeKey]string{b: "B-late"})
		oldest(b, h(4), "past the retention once it kept a tree")
	})
}
