package inventory

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func checkRoundTrip(t *testing.T, root *Node, top []File) {
	t.Helper()
	b := AppendStored(nil, root, top)
	got, gotTop, err := ParseStored(b)
	if err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if top == nil {
		top = []File{}
	}
	// JSON compares every field, and a leaf's nil and empty children alike.
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(root)
	if string(g) != string(w) || !reflect.DeepEqual(gotTop, top) {
		t.Fatalf("round trip through %s\n got %s %v\nwant %s %v", b, g, gotTop, w, top)
	}
}

func TestStoredFormRoundTrips(t *testing.T) {
	mtime := time.Date(2026, 11, 30, 6, 30, 24, 119787123, time.UTC)
	for _, tc := range []struct {
		name string
		root *Node
		top  []File
	}{
		{"empty tree, no top files", &Node{Path: "."}, nil},
		{"whole seconds and zero nanoseconds", &Node{Path: ".", Mtime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}, []File{}},
		{"nested", &Node{Path: ".", SizeBytes: 1 << 40, ApparentBytes: 7, Files: 3, Dirs: 2, Mtime: mtime, Children: []*Node{
			{Path: "a", SizeBytes: 4096, Files: 1, Dirs: 1, Mtime: mtime, Children: []*Node{{Path: "a/b", Dirs: 1}}},
			{Path: "c", SizeBytes: 18446744073709551615, ApparentBytes: 18446744073709551615, Files: 18446744073709551615, Dirs: 18446744073709551615},
		}}, []File{{Path: "a/big", SizeBytes: 1 << 30}, {Path: "c/x", SizeBytes: 0}}},
		{"a root that is not '.'", &Node{Path: "sub/dir", Children: []*Node{{Path: "sub/dir/x", Children: []*Node{{Path: "sub/dir/x/y"}}}}}, nil},
		{"names that need escaping", &Node{Path: ".", Children: []*Node{
			{Path: `quote"back\slash`}, {Path: "tab\tnl\n\x01"}, {Path: "<html>&amp;"}, {Path: "ünïcödé", Children: []*Node{{Path: "ünïcödé/日本"}}},
			{Path: "line\u2028sep\u2029"},
		}}, []File{{Path: "\x7f del and \x00 nul"}}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkRoundTrip(t, tc.root, tc.top) })
	}
}

func FuzzStoredForm(f *testing.F) {
	f.Add("a", "b", uint64(1), int64(1))
	f.Add("<&>\"", "\\\n", uint64(1<<63), int64(1796020262229793123))
	f.Fuzz(func(t *testing.T, n1, n2 string, size uint64, mtime int64) {
		if !isValidName(n1) || !isValidName(n2) {
			return // not a file name: JSON keeps only valid UTF-8, and names hold no '/' or NUL
		}
		mt := time.Time{}
		if mtime != 0 {
			mt = time.Unix(0, mtime).UTC()
		}
		root := &Node{Path: ".", SizeBytes: size, Mtime: mt, Children: []*Node{
			{Path: n1, Files: size, Mtime: mt, Children: []*Node{{Path: n1 + "/" + n2, Dirs: size}}},
		}}
		checkRoundTrip(t, root, []File{{Path: n1 + "/" + n2, SizeBytes: size}})
	})
}

func isValidName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\x00") && strings.ToValidUTF8(s, "") == s
}

// The second stored form was a compact JSON array; trees kept in it are
// still read.
func TestParseStoredReadsTheSecondForm(t *testing.T) {
	mtime := time.Date(2026, 11, 30, 6, 30, 24, 119787123, time.UTC)
	v2 := fmt.Sprintf(`[2,[".",10,11,3,2,%d,[["a",4,5,1,1,%d,[["b",0,0,0,1,0]]]]],[["a/f",4]]]`, mtime.UnixNano(), mtime.UnixNano())
	want := &Node{Path: ".", SizeBytes: 10, ApparentBytes: 11, Files: 3, Dirs: 2, Mtime: mtime, Children: []*Node{
		{Path: "a", SizeBytes: 4, ApparentBytes: 5, Files: 1, Dirs: 1, Mtime: mtime, Children: []*Node{{Path: "a/b", Dirs: 1}}}}}
	got, top, err := ParseStored([]byte(v2))
	if err != nil || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(top, []File{{Path: "a/f", SizeBytes: 4}}) {
		t.Errorf("second form: %+v %+v %v", got, top, err)
	}
}

// Damaged bytes in the third form are an error, never a panic, a huge
// allocation or a tree made up of what was left.
func TestParseStoredRejectsDamagedBinary(t *testing.T) {
	mtime := time.Date(2026, 11, 30, 6, 30, 24, 119787123, time.UTC)
	root := &Node{Path: ".", SizeBytes: 1 << 40, Files: 300, Mtime: mtime, Children: []*Node{
		{Path: "a", SizeBytes: 4096, Mtime: mtime.Add(-time.Hour), Children: []*Node{{Path: "a/b", Dirs: 1}}}}}
	good := AppendStored(nil, root, []File{{Path: "a/f", SizeBytes: 4096}})
	for n := 1; n < len(good); n++ {
		if got, _, err := ParseStored(good[:n]); err == nil {
			t.Errorf("cut to %d of %d bytes: parsed as %+v", n, len(good), got)
		}
	}
	if _, _, err := ParseStored(append(good, 0)); err == nil || !strings.Contains(err.Error(), "1 bytes after") {
		t.Errorf("a byte too many: %v", err)
	}
	// A children count of 2^62: more than the bytes left.
	huge := []byte{storedVersion, 1, '.', 0, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 0}
	if _, _, err := ParseStored(huge); err == nil || !strings.Contains(err.Error(), "more than the") {
		t.Errorf("a huge count: %v", err)
	}
	// Nodes nested one level deeper than ParseStored follows, each but the
	// last with one child; well formed otherwise.
	deep := []byte{storedVersion}
	for range maxStoredDepth + 1 {
		deep = append(deep, 1, 'x', 0, 0, 0, 0, 0, 1)
	}
	deep = append(deep, 1, 'x', 0, 0, 0, 0, 0, 0, 0)
	if _, _, err := ParseStored(deep); err == nil || !strings.Contains(err.Error(), "deeper") {
		t.Errorf("nodes nested %d deep: %v", maxStoredDepth+2, err)
	}
}

func FuzzParseStored(f *testing.F) {
	f.Add(AppendStored(nil, &Node{Path: ".", Children: []*Node{{Path: "a"}}}, []File{{Path: "a", SizeBytes: 1}}))
	f.Add([]byte(`[2,[".",1,2,3,4,5],[]]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ParseStored(b) // an error or a tree, never a panic
	})
}

// The stored form before these was the printed JSON object; trees kept
// in that form are still read.
func TestParseStoredReadsTheFirstForm(t *testing.T) {
	mtime := time.Date(2026, 11, 30, 6, 30, 24, 119787123, time.UTC)
	root := &Node{Path: ".", SizeBytes: 10, Files: 1, Dirs: 2, Mtime: mtime, Children: []*Node{{Path: "a", SizeBytes: 4, Dirs: 1, Mtime: mtime}}}
	top := []File{{Path: "a/f", SizeBytes: 4}}
	// As the first form was written, under the JSON names Node had then.
	v1 := []byte(`{"path":".","size_bytes":10,"apparent_bytes":0,"files":1,"dirs":2,"mtime":"2026-11-30T06:30:24.119787123Z",` +
		`"children":[{"path":"a","size_bytes":4,"apparent_bytes":0,"files":0,"dirs":1,"mtime":"2026-11-30T06:30:24.119787123Z"}],` +
		`"top_files":[{"path":"a/f","size_bytes":4}]}`)
	got, gotTop, err := ParseStored(v1)
	if err != nil || !reflect.DeepEqual(got, root) || !reflect.DeepEqual(gotTop, top) {
		t.Errorf("first form: %+v %+v %v", got, gotTop, err)
	}
}

func TestParseStoredRejectsWhatItDoesNotKnow(t *testing.T) {
	for _, bad := range []string{
		``, `null`, `[]`, `[1,["."],[]]`, `[2,["."],[]]`, `[2,[".",1,2,3,4,5],{}]`,
		`[2,[".",1,2,3,4,5],[["a"]]]`, `[2,[".",1,2,3,4,5],[[1,2]]]`, `[2,[".",-1,2,3,4,5],[]]`,
		`[2,[".",1,2,3,4,1.5],[]]`, `[2,[".",1,2,3,4,"5"],[]]`, `[2,[1,1,2,3,4,5],[]]`,
		`[2,[".",1,2,3,4,5,[["a"]]],[]]`, `[2,[".",1,2,3,4,5,{}],[]]`, `[2,[".",1,2,3,4,5],[]`, `{"path":`,
		`[2,[".",18446744073709551616,2,3,4,5],[]]`,
	} {
		if root, _, err := ParseStored([]byte(bad)); err == nil {
			t.Errorf("%s parsed as %+v", bad, root)
		}
	}
}

// A walk's tree, stored and read back, is the tree the walk returned.
func TestStoredFormOfAWalk(t *testing.T) {
	dir := t.TempDir()
	makeTree(t, dir)
	res, err := Walk(dir, Options{Depth: 8, TopK: 50})
	if err != nil {
		t.Fatal(err)
	}
	checkRoundTrip(t, res.Root, res.TopFiles)
	printed, _ := json.Marshal(res.Root)
	if stored := AppendStored(nil, res.Root, nil); len(stored)*6 > len(printed) {
		t.Errorf("the stored form is %d bytes, the printed %d: not compact", len(stored), len(printed))
	}
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
	if Shallow(root, 22) != root {
		t.Error("a tree that fits is copied: it is shared, as the snapshot's own")
	}
}
