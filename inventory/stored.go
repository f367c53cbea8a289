package inventory

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// The stored form of a walk's tree: what the store keeps of a snapshot, on
// every snapshot, so it is made compact rather than self-describing. The
// bytes a changed tree writes are what storing it costs (the WAL, the
// checkpoint; the store skips the pages of an unchanged one): in this
// third form a 4,300-node tree is 86 KB where the JSON of the second was
// 216 KB, and `xfsq snapshot` of it 3–6 ms faster (docs/benchmarks.md).
//
//	TREE  = 0x03 NODE COUNT FILE…
//	NODE  = NAME SIZE_BYTES APPARENT_BYTES FILES DIRS MTIME COUNT NODE…
//	FILE  = PATH SIZE_BYTES
//
// NAME and PATH are a uvarint length and the bytes; NAME is the node's
// path below its parent (the root's own path for the root). The numbers
// and COUNTs are uvarints, except MTIME: the node's mtime in nanoseconds
// since the epoch (0: none) subtracted from its parent's (the root's from
// 0), as a zig-zag varint, which for a walk's tree (a parent is at least
// as new as its children) is short.
//
// ParseStored also reads the earlier forms: the printed JSON object (1)
// and the compact JSON array [2, NODE, [[PATH, SIZE_BYTES], …]] (2).

// storedVersion leads the stored form; JSON, the earlier forms, starts with '{' or '['.
const storedVersion = 3

// maxStoredDepth bounds how deep ParseStored follows nodes: a walk keeps
// at most MaxDepth levels below its root, so anything deeper is damage.
const maxStoredDepth = MaxDepth + 1

// AppendStored appends the stored form of root and top to b. Node paths
// must be as a walk makes them: a child's path is its parent's plus "/"
// and a name, and the root's children have no parent prefix.
func AppendStored(b []byte, root *Node, top []File) []byte {
	b = slices.Grow(b, 32*countNodes(root)+32*len(top)) // one allocation, not a dozen copies
	b = append(b, storedVersion)
	b = appendStoredNode(b, root, root.Path, 0)
	b = binary.AppendUvarint(b, uint64(len(top)))
	for _, f := range top {
		b = appendStoredString(b, f.Path)
		b = binary.AppendUvarint(b, f.SizeBytes)
	}
	return b
}

func appendStoredNode(b []byte, n *Node, name string, parentNs int64) []byte {
	b = appendStoredString(b, name)
	b = binary.AppendUvarint(b, n.SizeBytes)
	b = binary.AppendUvarint(b, n.ApparentBytes)
	b = binary.AppendUvarint(b, n.Files)
	b = binary.AppendUvarint(b, n.Dirs)
	ns := unixNano(n.Mtime)
	b = binary.AppendVarint(b, parentNs-ns)
	b = binary.AppendUvarint(b, uint64(len(n.Children)))
	for _, c := range n.Children {
		b = appendStoredNode(b, c, childName(n.Path, c.Path), ns)
	}
	return b
}

// childName is a child's path below its parent's, sliced rather than
// trimmed of a built prefix: AppendStored runs on every snapshot, and a
// string per node was a third of its time.
func childName(parent, child string) string {
	if parent == "." {
		return child
	}
	if len(child) > len(parent) && child[len(parent)] == '/' && child[:len(parent)] == parent {
		return child[len(parent)+1:]
	}
	return child
}

func appendStoredString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// unixNano is t in nanoseconds since the epoch, 0 for the zero time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func countNodes(n *Node) int {
	c := 1
	for _, ch := range n.Children {
		c += countNodes(ch)
	}
	return c
}

// childPrefix is what the paths of a node's children start with.
func childPrefix(path string) string {
	if path == "." {
		return ""
	}
	return path + "/"
}

// ParseStored reads a stored tree and its top files.
func ParseStored(b []byte) (*Node, []File, error) {
	if len(b) > 0 && b[0] == storedVersion {
		return parseBinary(b[1:])
	}
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 && t[0] == '{' { // the first form
		var v1 struct {
			nodeV1
			TopFiles []File `json:"top_files"`
		}
		if err := json.Unmarshal(b, &v1); err != nil {
			return nil, nil, fmt.Errorf("stored tree: %w", err)
		}
		return v1.node(), v1.TopFiles, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber() // sizes and nanoseconds do not fit a float64
	var v []any
	if err := d.Decode(&v); err != nil {
		return nil, nil, fmt.Errorf("stored tree: %w", err)
	}
	if len(v) != 3 || v[0] != json.Number("2") {
		return nil, nil, errors.New("stored tree: not [2, NODE, TOP_FILES]")
	}
	root, err := parseStoredNode(v[1], "")
	if err != nil {
		return nil, nil, err
	}
	files, ok := v[2].([]any)
	if !ok {
		return nil, nil, errors.New("stored tree: top files are not a list")
	}
	top := make([]File, 0, len(files))
	for _, f := range files {
		pair, ok := f.([]any)
		if !ok || len(pair) != 2 {
			return nil, nil, fmt.Errorf("stored tree: top file %v is not [PATH, SIZE_BYTES]", f)
		}
		path, ok := pair[0].(string)
		size, err := storedUint(pair[1])
		if !ok || err != nil {
			return nil, nil, fmt.Errorf("stored tree: top file %v is not [PATH, SIZE_BYTES]", f)
		}
		top = append(top, File{Path: path, SizeBytes: size})
	}
	return root, top, nil
}

func parseStoredNode(v any, prefix string) (*Node, error) {
	f, ok := v.([]any)
	if !ok || (len(f) != 6 && len(f) != 7) {
		return nil, fmt.Errorf("stored tree: node %.80v is not [NAME, SIZE_BYTES, APPARENT_BYTES, FILES, DIRS, MTIME_NS, CHILDREN?]", v)
	}
	name, ok := f[0].(string)
	if !ok {
		return nil, fmt.Errorf("stored tree: node name %v is not a string", f[0])
	}
	n := &Node{Path: prefix + name}
	for i, dst := range []*uint64{&n.SizeBytes, &n.ApparentBytes, &n.Files, &n.Dirs} {
		var err error
		if *dst, err = storedUint(f[1+i]); err != nil {
			return nil, fmt.Errorf("stored tree: node %s: %w", n.Path, err)
		}
	}
	num, ok := f[5].(json.Number)
	ns, err := strconv.ParseInt(string(num), 10, 64)
	if !ok || err != nil {
		return nil, fmt.Errorf("stored tree: node %s: mtime %v is not nanoseconds", n.Path, f[5])
	}
	if ns != 0 {
		n.Mtime = time.Unix(0, ns).UTC()
	}
	if len(f) == 7 {
		children, ok := f[6].([]any)
		if !ok {
			return nil, fmt.Errorf("stored tree: node %s: children are not a list", n.Path)
		}
		for _, c := range children {
			child, err := parseStoredNode(c, childPrefix(n.Path))
			if err != nil {
				return nil, err
			}
			n.Children = append(n.Children, child)
		}
	}
	return n, nil
}

func storedUint(v any) (uint64, error) {
	num, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%v is not a number", v)
	}
	return strconv.ParseUint(string(num), 10, 64)
}

// storedReader reads the third form; the first error sticks and every
// later read returns zero.
type storedReader struct {
	b   []byte
	err error
}

func (r *storedReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("stored tree: %s", what)
	}
	r.b = nil
}

func (r *storedReader) uvarint(what string) uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(what + " is cut short or too large")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// varint reads binary.AppendVarint's zig-zag form: a uvarint whose lowest
// bit is the sign.
func (r *storedReader) varint(what string) int64 {
	u := r.uvarint(what)
	return int64(u>>1) ^ -int64(u&1)
}

// count reads how many items follow. Each takes at least one byte, so a
// count beyond what is left is damage, not a reason to allocate.
func (r *storedReader) count(what string) int {
	c := r.uvarint(what)
	if c > uint64(len(r.b)) {
		r.fail(fmt.Sprintf("%s %d is more than the %d bytes left", what, c, len(r.b)))
		return 0
	}
	return int(c)
}

func (r *storedReader) string(what string) string {
	l := r.count(what + " length")
	s := string(r.b[:l])
	r.b = r.b[l:]
	return s
}

func parseBinary(b []byte) (*Node, []File, error) {
	r := &storedReader{b: b}
	root := r.node("", 0, 0)
	top := make([]File, r.count("top files count"))
	for i := range top {
		top[i] = File{Path: r.string("top file path"), SizeBytes: r.uvarint("top file size")}
	}
	if r.err == nil && len(r.b) > 0 {
		r.fail(fmt.Sprintf("%d bytes after the top files", len(r.b)))
	}
	if r.err != nil {
		return nil, nil, r.err
	}
	return root, top, nil
}

func (r *storedReader) node(prefix string, parentNs int64, depth int) *Node {
	if depth > maxStoredDepth {
		r.fail(fmt.Sprintf("nodes nest deeper than %d levels", maxStoredDepth))
		return nil
	}
	n := &Node{Path: prefix + r.string("node name")}
	n.SizeBytes, n.ApparentBytes = r.uvarint("size_bytes"), r.uvarint("apparent_bytes")
	n.Files, n.Dirs = r.uvarint("files"), r.uvarint("dirs")
	if ns := parentNs - r.varint("mtime"); ns != 0 {
		n.Mtime = time.Unix(0, ns).UTC()
	}
	if c := r.count("children count"); c > 0 {
		n.Children = make([]*Node, c)
		for i := range n.Children {
			n.Children[i] = r.node(childPrefix(n.Path), unixNano(n.Mtime), depth+1)
		}
	}
	return n
}

// Shallow returns root cut to at most maxNodes nodes by dropping whole
// levels from the bottom: the deepest depth whose nodes, with all above
// them, fit. A stored tree stays bounded even for a depth-8 walk of a huge
// tree (20^8 possible nodes), and what is kept is complete to its depth.
// root itself is always kept; nodes are shared with root, not copied,
// except those whose children were cut.
func Shallow(root *Node, maxNodes int) *Node {
	total, depth := 1, 0
	for level := []*Node{root}; ; depth++ {
		var next []*Node
		for _, n := range level {
			next = append(next, n.Children...)
		}
		if len(next) == 0 {
			return root // all of it fits
		}
		if total+len(next) > maxNodes {
			break
		}
		total += len(next)
		level = next
	}
	return cut(root, depth)
}

// cut copies the nodes down to depth and drops their children there.
func cut(n *Node, depth int) *Node {
	if len(n.Children) == 0 {
		return n
	}
	c := *n
	if depth == 0 {
		c.Children = nil
		return &c
	}
	c.Children = make([]*Node, len(n.Children))
	for i, ch := range n.Children {
		c.Children[i] = cut(ch, depth-1)
	}
	return &c
}

// nodeV1 is a Node as the first stored form spelt it: Node's JSON names
// have changed since (CHANGELOG.md), the stored rows have not.
type nodeV1 struct {
	Path          string    `json:"path"`
	SizeBytes     uint64    `json:"size_bytes"`
	ApparentBytes uint64    `json:"apparent_bytes"`
	Files         uint64    `json:"files"`
	Dirs          uint64    `json:"dirs"`
	Mtime         time.Time `json:"mtime"`
	Children      []*nodeV1 `json:"children,omitempty"`
}

func (v *nodeV1) node() *Node {
	n := &Node{Path: v.Path, SizeBytes: v.SizeBytes, ApparentBytes: v.ApparentBytes, Files: v.Files, Dirs: v.Dirs, Mtime: v.Mtime}
	for _, c := range v.Children {
		n.Children = append(n.Children, c.node())
	}
	return n
}
