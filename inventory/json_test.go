package inventory

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

type treeJSON struct {
	Node
	TopFiles []File `json:"top_files"`
}

func checkAppendJSON(t *testing.T, root *Node, top []File) {
	t.Helper()
	want, err := json.Marshal(treeJSON{*root, top})
	if err != nil {
		t.Fatal(err)
	}
	if got := AppendJSON(nil, root, top); string(got) != string(want) {
		t.Fatalf("AppendJSON differs from encoding/json:\n got %s\nwant %s", got, want)
	}
}

func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	mtime := time.Date(2026, 11, 30, 6, 30, 24, 119787123, time.UTC)
	for _, tc := range []struct {
		name string
		root *Node
		top  []File
	}{
		{"empty tree, nil top files", &Node{Path: "."}, nil},
		{"empty top files", &Node{Path: ".", Mtime: mtime}, []File{}},
		{"whole seconds and zero nanoseconds", &Node{Path: ".", Mtime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}, nil},
		{"nested", &Node{Path: ".", SizeBytes: 1 << 40, ApparentBytes: 7, Files: 3, Dirs: 2, Mtime: mtime, Children: []*Node{
			{Path: "a", SizeBytes: 4096, Files: 1, Dirs: 1, Mtime: mtime, Children: []*Node{{Path: "a/b", Dirs: 1}}},
			{Path: "c", SizeBytes: 18446744073709551615},
		}}, []File{{Path: "a/big", SizeBytes: 1 << 30}, {Path: "c/x", SizeBytes: 0}}},
		{"empty children slice is omitted", &Node{Path: "x", Children: []*Node{}}, nil},
		{"paths that need escaping", &Node{Path: ".", Children: []*Node{
			{Path: `quote"back\slash`}, {Path: "tab\tnl\n\x01"}, {Path: "<html>&amp;"}, {Path: "a<b"}, {Path: "a>b"}, {Path: "a&b"},
			{Path: "ünïcödé/日本"}, {Path: "bad\xffutf8\xc3"}, {Path: "line\u2028sep\u2029"},
		}}, []File{{Path: "\x7f del and \x00 nul"}}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkAppendJSON(t, tc.root, tc.top) })
	}
}

func FuzzAppendJSON(f *testing.F) {
	f.Add("a", "b/c", uint64(1), int64(0))
	f.Add("\xff<&>\"", "\\\n", uint64(1<<63), int64(1796020262229793123))
	f.Fuzz(func(t *testing.T, p1, p2 string, size uint64, mtime int64) {
		mt := time.Unix(0, mtime).UTC() // years 1677–2262: inside what encoding/json accepts
		root := &Node{Path: p1, SizeBytes: size, Mtime: mt, Children: []*Node{{Path: p2, Files: size, Mtime: mt}}}
		checkAppendJSON(t, root, []File{{Path: p2, SizeBytes: size}})
	})
}

func TestShallow(t *testing.T) {
	// A tree with 1 root, 3 children, 6 grandchildren, 12 great-grandchildren.
	root := &Node{Path: "."}
	for i := range 3 {
		c := &Node{Path: fmt.Sprint(i)}
		for j := range 2 {
			g := &Node{Path: fmt.Sprint(i, "/", j)}
			for k := range 2 {
				g.Children = append(g.Children, &Node{Path: fmt.Sprint(i, "/", j, "/", k)})
			}
			c.Children = append(c.Children, g)
		}
		root.Children = append(root.Children, c)
	}
	count := func(n *Node) (nodes, depth int) {
		var walk func(*Node, int)
		walk = func(n *Node, d int) {
			nodes++
			depth = max(depth, d)
			for _, c := range n.Children {
				walk(c, d+1)
			}
		}
		walk(n, 0)
		return
	}
	for _, tc := range []struct{ max, nodes, depth int }{
		{1, 1, 0}, {3, 1, 0}, {4, 4, 1}, {9, 4, 1}, {10, 10, 2}, {21, 10, 2}, {22, 22, 3}, {1000, 22, 3},
	} {
		got := Shallow(root, tc.max)
		if nodes, depth := count(got); nodes != tc.nodes || depth != tc.depth {
			t.Errorf("Shallow(max %d): %d nodes to depth %d, want %d to depth %d", tc.max, nodes, depth, tc.nodes, tc.depth)
		}
	}
	if n, d := count(root); n != 22 || d != 3 {
		t.Fatalf("Shallow changed its input: %d nodes, depth %d", n, d)
	}
}
