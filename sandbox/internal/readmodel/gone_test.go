package readmodel

import (
	"slices"
	"testing"

	"github.com/xfsq/xfsq/inventory"
)

// A path deleted since the snapshot leaves the tree and the largest files,
// and every directory above it loses what it held; the rest, and the
// snapshot's own nodes, are untouched.
func TestWithoutGone(t *testing.T) {
	tree := func() *inventory.Node {
		return &inventory.Node{Path: ".", SizeBytes: 100, ApparentBytes: 100, Files: 5, Dirs: 3, Children: []*inventory.Node{
			{Path: "dist", SizeBytes: 60, ApparentBytes: 60, Files: 3, Dirs: 1, Children: []*inventory.Node{
				{Path: "dist/old", SizeBytes: 40, ApparentBytes: 40, Files: 2},
			}},
			{Path: "data", SizeBytes: 40, ApparentBytes: 40, Files: 2},
		}}
	}
	top := []inventory.File{{Path: "dist/old/a.js", SizeBytes: 30}, {Path: "data/x", SizeBytes: 20}, {Path: "dist/b", SizeBytes: 20}, {Path: "distant", SizeBytes: 1}}
	for _, c := range []struct {
		name      string
		gone      []gonePath
		size      uint64 // the root's
		files     uint64
		distSize  int64 // -1: dist/ is gone
		wantFiles []string
	}{
		{"nothing", nil, 100, 5, 60, []string{"dist/old/a.js", "data/x", "dist/b", "distant"}},
		{"a directory it kept", []gonePath{{"dist", 60}}, 40, 2, -1, []string{"data/x", "distant"}},
		{"a directory below one", []gonePath{{"dist/old", 40}}, 60, 3, 20, []string{"data/x", "dist/b", "distant"}},
		{"a file it kept no node of", []gonePath{{"dist/b", 20}}, 80, 4, 40, []string{"dist/old/a.js", "data/x", "distant"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := tree()
			n, files := withoutGone(before, top, c.gone)
			if n.SizeBytes != c.size || n.Files != c.files {
				t.Errorf("root: %d B, %d files; want %d, %d", n.SizeBytes, n.Files, c.size, c.files)
			}
			i := slices.IndexFunc(n.Children, func(ch *inventory.Node) bool { return ch.Path == "dist" })
			if got := int64(-1); i >= 0 {
				got = int64(n.Children[i].SizeBytes)
				if got != c.distSize {
					t.Errorf("dist/: %d B, want %d", got, c.distSize)
				}
			} else if c.distSize != -1 {
				t.Errorf("dist/ is gone, want %d B", c.distSize)
			}
			var paths []string
			for _, f := range files {
				paths = append(paths, f.Path)
			}
			if !slices.Equal(paths, c.wantFiles) {
				t.Errorf("largest files %q, want %q", paths, c.wantFiles)
			}
			if before.SizeBytes != 100 || len(before.Children) != 2 || len(top) != 4 {
				t.Error("the snapshot itself was changed")
			}
		})
	}
}
