package readmodel

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/store"
)

// What changed in a tree between two of its stored snapshots — by
// default its newest and the one kept from a day before — read from the
// store, never by walking it again: the directories that grew or shrank
// most and the top-level entries that are new or gone. Trees are kept for
// comparison every store.HistoryEvery at most (not every snapshot's), for
// store.HistoryRetention.

// DefaultDiffSince is how far back a diff compares by default.
const DefaultDiffSince = 24 * time.Hour

// DefaultDiffTop is how many paths each list of a diff shows by default.
const DefaultDiffTop = 10

// DiffOptions choose the tree and how far back to compare.
type DiffOptions struct {
	Area  string        // "": the workspace
	Since time.Duration // 0: DefaultDiffSince
	Top   int           // 0: DefaultDiffTop
}

// The answer is the wire's (api/v1), which the server encodes as it is
// (GET …/projects/{id}/diff).
type (
	TreeDiff   = apiv1.TreeDiff
	PathChange = apiv1.PathChange
)

// MaxDiffTop bounds how many paths a diff's lists hold.
const MaxDiffTop = 1000

// Diff compares a tree's newest stored snapshot with the one kept from
// o.Since before it.
func (m *Model) Diff(ctx context.Context, name string, o DiffOptions) (TreeDiff, error) {
	o.Area = cmp.Or(o.Area, area.Workspace)
	o.Since = cmp.Or(o.Since, DefaultDiffSince)
	o.Top = cmp.Or(o.Top, DefaultDiffTop)
	switch {
	case o.Since < 0:
		return TreeDiff{}, fieldErrorf("since", "%s: use a positive duration such as 24h", o.Since)
	case o.Top < 1 || o.Top > MaxDiffTop:
		return TreeDiff{}, fieldErrorf("top", "%d: use 1 to %d", o.Top, MaxDiffTop)
	}
	t, err := m.Tree(ctx, name, o.Area)
	if err != nil {
		return TreeDiff{}, err
	}
	k := store.TreeKey{Project: t.Project, Area: t.Area}
	latest, ok, err := m.Store.LatestSnapshot(ctx, k)
	if err != nil {
		return TreeDiff{}, err
	}
	if !ok {
		return TreeDiff{}, errkind.WithHint(errkind.NotFound, fmt.Errorf("%s %s has no snapshot yet", name, o.Area),
			"the hourly snapshot pass takes one; a snapshot of the project takes one now")
	}
	from, ok, err := m.Store.TreeAt(ctx, k, latest.At.Add(-o.Since))
	if err != nil {
		return TreeDiff{}, err
	}
	if !ok {
		return TreeDiff{}, m.noTreeThatOld(ctx, k, o.Since)
	}
	toBytes, err := m.Store.LatestTree(ctx, k)
	if err != nil {
		return TreeDiff{}, err
	}
	return diffTrees(t.Project, t.Area, from.Tree, toBytes, from.At, latest, o.Top)
}

func (m *Model) noTreeThatOld(ctx context.Context, k store.TreeKey, since time.Duration) error {
	oldest, err := m.Store.OldestTree(ctx, k)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("no snapshot of %s %s is kept from %s before its newest", k.Project, k.Area, since)
	if oldest.IsZero() {
		return errkind.WithHint(errkind.NotFound, fmt.Errorf("%s: none is kept yet", what),
			fmt.Sprintf("snapshots are kept for comparison every %s; compare again after the next ones", store.HistoryEvery))
	}
	return errkind.WithHint(errkind.NotFound, fmt.Errorf("%s: the oldest kept is from %s", what, oldest.UTC().Format(time.RFC3339)),
		"compare over a shorter span")
}

// diffTrees compares two stored trees (inventory's stored form).
func diffTrees(project, a string, fromTree, toTree []byte, fromAt time.Time, latest store.Snapshot, top int) (TreeDiff, error) {
	before, beforeFiles, err := inventory.ParseStored(fromTree)
	if err != nil {
		return TreeDiff{}, fmt.Errorf("read the snapshot kept from %s: %w", fromAt.UTC().Format(time.RFC3339), err)
	}
	after, afterFiles, err := inventory.ParseStored(toTree)
	if err != nil {
		return TreeDiff{}, fmt.Errorf("read the newest snapshot: %w", err)
	}
	d := TreeDiff{Project: project, Area: a, FromAt: fromAt.UTC(), ToAt: latest.At.UTC(), Partial: latest.Partial,
		Grew: []PathChange{}, Shrank: []PathChange{}, New: []PathChange{}, Gone: []PathChange{}}
	if before != nil {
		d.FromBytes = before.SizeBytes
	}
	if after != nil {
		d.ToBytes = after.SizeBytes
	}
	d.ChangeBytes = int64(d.ToBytes) - int64(d.FromBytes)
	d.New, d.Gone = topOnly(topLevel(before, beforeFiles), topLevel(after, afterFiles))
	was, is := index(before), index(after)
	var changes []PathChange
	// Directories there now, then those gone; each with its children at
	// both ends, to tell whether one of them carries its change.
	eachNode(after, func(n *inventory.Node) {
		c := change(n.Path, sizeOf(was[n.Path]), n.SizeBytes)
		if n.Path != "." && c.ChangeBytes != 0 && !carriedByAChild(c.ChangeBytes, n, was[n.Path], was, is) {
			changes = append(changes, c)
		}
	})
	eachNode(before, func(n *inventory.Node) {
		if _, there := is[n.Path]; !there && n.Path != "." && n.SizeBytes > 0 && !carriedByAChild(-int64(n.SizeBytes), nil, n, was, is) {
			changes = append(changes, change(n.Path, n.SizeBytes, 0))
		}
	})
	slices.SortFunc(changes, func(x, y PathChange) int {
		return cmp.Or(cmp.Compare(abs(y.ChangeBytes), abs(x.ChangeBytes)), strings.Compare(x.Path, y.Path))
	})
	for _, c := range changes {
		switch {
		case c.ChangeBytes > 0 && len(d.Grew) < top:
			d.Grew = append(d.Grew, c)
		case c.ChangeBytes < 0 && len(d.Shrank) < top:
			d.Shrank = append(d.Shrank, c)
		}
	}
	d.New, d.Gone = d.New[:min(len(d.New), top)], d.Gone[:min(len(d.Gone), top)]
	return d, nil
}

// carriedByAChild says whether one child of a directory (now, and as it
// was: either may be nil) changed by 90 % or more of the directory's own
// change, in the same direction: the child says it better.
func carriedByAChild(delta int64, now, was *inventory.Node, wasIdx, isIdx map[string]*inventory.Node) bool {
	carries := func(cd int64) bool { return (cd > 0) == (delta > 0) && abs(cd)*10 >= abs(delta)*9 }
	if now != nil {
		for _, c := range now.Children {
			if carries(int64(c.SizeBytes) - int64(sizeOf(wasIdx[c.Path]))) {
				return true
			}
		}
	}
	if was != nil {
		for _, c := range was.Children {
			if _, there := isIdx[c.Path]; !there && carries(-int64(c.SizeBytes)) {
				return true
			}
		}
	}
	return false
}

// index is every directory of a stored tree by path.
func index(root *inventory.Node) map[string]*inventory.Node {
	n := 0
	eachNode(root, func(*inventory.Node) { n++ })
	out := make(map[string]*inventory.Node, n)
	eachNode(root, func(n *inventory.Node) { out[n.Path] = n })
	return out
}

// eachNode calls fn on every node of a tree, parents first.
func eachNode(n *inventory.Node, fn func(*inventory.Node)) {
	if n == nil {
		return
	}
	fn(n)
	for _, c := range n.Children {
		eachNode(c, fn)
	}
}

func sizeOf(n *inventory.Node) uint64 {
	if n == nil {
		return 0
	}
	return n.SizeBytes
}

// topLevel is a tree's top-level entries with their sizes: its root's
// directories and the largest files that sit at its top.
func topLevel(root *inventory.Node, files []inventory.File) map[string]uint64 {
	out := map[string]uint64{}
	if root == nil {
		return out
	}
	for _, c := range root.Children {
		out[c.Path] = c.SizeBytes
	}
	for _, f := range files {
		if !strings.Contains(f.Path, "/") {
			out[f.Path] = f.SizeBytes
		}
	}
	return out
}

// topOnly lists the entries only after has (new) and only before has
// (gone), largest first.
func topOnly(before, after map[string]uint64) (added, gone []PathChange) {
	added, gone = []PathChange{}, []PathChange{}
	for p, n := range after {
		if _, ok := before[p]; !ok {
			added = append(added, change(p, 0, n))
		}
	}
	for p, n := range before {
		if _, ok := after[p]; !ok {
			gone = append(gone, change(p, n, 0))
		}
	}
	bySize := func(x, y PathChange) int {
		return cmp.Or(cmp.Compare(abs(y.ChangeBytes), abs(x.ChangeBytes)), strings.Compare(x.Path, y.Path))
	}
	slices.SortFunc(added, bySize)
	slices.SortFunc(gone, bySize)
	return added, gone
}

func change(path string, from, to uint64) PathChange {
	return PathChange{Path: path, FromBytes: from, ToBytes: to, ChangeBytes: int64(to) - int64(from)}
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
