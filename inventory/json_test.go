package inventory

import (
	"encoding/json"
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
