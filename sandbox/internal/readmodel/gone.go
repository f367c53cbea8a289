package readmodel

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/store"
)

// goneReadLimit bounds how many deletions journalled since a tree's last
// snapshot are read to take them out of it: more than that since one
// snapshot is a sweep the next walk (hourly) shows better than a list.
const goneReadLimit = 2000

// WithoutGone is a stored tree of t, snapshotted at at, without what the
// journal says was deleted from t since.
func (m *Model) WithoutGone(ctx context.Context, t core.TreeStatus, at time.Time, root *inventory.Node, top []inventory.File) (*inventory.Node, []inventory.File, error) {
	gone, err := m.goneSince(ctx, t, at)
	if err != nil {
		return nil, nil, err
	}
	root, top = withoutGone(root, top, gone)
	return root, top, nil
}

// goneSince is what the journal says was deleted from tree t (paths
// relative to the tree) after at, settled whole: a sweep's evictions and a
// files rm. A snapshot found those paths; they are no longer there.
func (m *Model) goneSince(ctx context.Context, t core.TreeStatus, at time.Time) ([]gonePath, error) {
	evs, err := m.Store.Events(ctx, store.EventFilter{Type: journal.TypeEvicted, Project: t.Project, Since: at, Limit: goneReadLimit})
	if err != nil {
		return nil, err
	}
	var out []gonePath
	for _, e := range evs {
		p, err := e.Decode()
		ev, ok := p.(journal.Evicted)
		if err != nil || !ok || ev.Area != t.Area || ev.State != journal.StateDone {
			continue
		}
		if rel, ok := strings.CutPrefix(ev.Path, t.Path+"/"); ok && rel != "" {
			out = append(out, gonePath{path: rel, bytes: ev.Bytes})
		}
	}
	return out, nil
}

// gonePath is one deleted path of a tree and the bytes its removal freed.
type gonePath struct {
	path  string
	bytes uint64
}

// withoutGone is a snapshot's tree and largest files less the deleted
// paths: a node or file at or under one is dropped, and the directories
// above it lose what it held. The stored snapshot is not changed (it is
// what the walk found); n is copied where it changes.
func withoutGone(n *inventory.Node, top []inventory.File, gone []gonePath) (*inventory.Node, []inventory.File) {
	if len(gone) == 0 {
		return n, top
	}
	top = slices.DeleteFunc(slices.Clone(top), func(f inventory.File) bool {
		return slices.ContainsFunc(gone, func(g gonePath) bool { return under(f.Path, g.path) })
	})
	for _, g := range gone {
		n = dropPath(n, g)
	}
	return n, top
}

// under says whether path is p or inside it.
func under(path, p string) bool { return path == p || strings.HasPrefix(path, p+"/") }

// lost is what a deletion took from every directory above it.
type lost struct{ size, apparent, files, dirs uint64 }

// dropPath is n without g: the node of g's path, if the snapshot kept
// one, is removed, and every directory above g loses what it held (the
// node's own figures when there is one, else one file of the bytes the
// deletion freed).
func dropPath(n *inventory.Node, g gonePath) *inventory.Node {
	if n == nil {
		return nil
	}
	l := lost{size: g.bytes, apparent: g.bytes, files: 1}
	if d := descendant(n, g.path); d != nil {
		l = lost{d.SizeBytes, d.ApparentBytes, d.Files, d.Dirs + 1}
	}
	return dropUnder(n, g.path, l)
}

// dropUnder is n (a directory above path) less l, without path's node.
func dropUnder(n *inventory.Node, path string, l lost) *inventory.Node {
	c := *n
	c.SizeBytes -= min(c.SizeBytes, l.size)
	c.ApparentBytes -= min(c.ApparentBytes, l.apparent)
	c.Files -= min(c.Files, l.files)
	c.Dirs -= min(c.Dirs, l.dirs)
	c.Children = nil
	for _, ch := range n.Children {
		switch {
		case ch.Path == path:
		case under(path, ch.Path):
			c.Children = append(c.Children, dropUnder(ch, path, l))
		default:
			c.Children = append(c.Children, ch)
		}
	}
	return &c
}

// descendant is the node of path under n, if the snapshot kept one.
func descendant(n *inventory.Node, path string) *inventory.Node {
	for _, ch := range n.Children {
		if ch.Path == path {
			return ch
		}
		if under(path, ch.Path) {
			return descendant(ch, path)
		}
	}
	return nil
}
