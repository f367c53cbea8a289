package inventory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The stored form of a walk's tree: what the store keeps of a snapshot, on
// every snapshot, so it is made compact rather than self-describing. It is
// JSON, so an operator can still read it in the database:
//
//	[2, NODE, [[PATH, SIZE_BYTES], …]]                       the tree and its top files
//	NODE = [NAME, SIZE_BYTES, APPARENT_BYTES, FILES, DIRS, MTIME_NS]
//	     | [NAME, SIZE_BYTES, APPARENT_BYTES, FILES, DIRS, MTIME_NS, [NODE, …]]
//
// NAME is the node's path below its parent (the root's own path for the
// root), MTIME_NS nanoseconds since the epoch, 0 when there is none.
// Against the printed form it is 37 % of the bytes, and the bytes a
// snapshot writes are what storing it costs (the WAL, its fsync, the
// checkpoint): ~5 ms of `xfsq snapshot` for a 4,300-node tree.
//
// ParseStored also reads the first form, the printed JSON object.

// storedVersion leads the stored form.
const storedVersion = 2

// AppendStored appends the stored form of root and top to b. Node paths
// must be as a walk makes them: a child's path is its parent's plus "/"
// and a name, and the root's children have no parent prefix.
func AppendStored(b []byte, root *Node, top []File) []byte {
	b = slices.Grow(b, 64*countNodes(root)+64*len(top)) // one allocation, not a dozen copies
	b = append(strconv.AppendInt(append(b, '['), storedVersion, 10), ',')
	b = appendStoredNode(b, root, root.Path)
	b = append(b, ",["...)
	for i, f := range top {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = appendString(b, f.Path)
		b = append(b, ',')
		b = strconv.AppendUint(b, f.SizeBytes, 10)
		b = append(b, ']')
	}
	return append(b, "]]"...)
}

func appendStoredNode(b []byte, n *Node, name string) []byte {
	b = append(b, '[')
	b = appendString(b, name)
	for _, v := range [...]uint64{n.SizeBytes, n.ApparentBytes, n.Files, n.Dirs} {
		b = append(b, ',')
		b = strconv.AppendUint(b, v, 10)
	}
	b = append(b, ',')
	if n.Mtime.IsZero() {
		b = append(b, '0')
	} else {
		b = strconv.AppendInt(b, n.Mtime.UnixNano(), 10)
	}
	if len(n.Children) > 0 {
		b = append(b, ",["...)
		prefix := childPrefix(n.Path)
		for i, c := range n.Children {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendStoredNode(b, c, strings.TrimPrefix(c.Path, prefix))
		}
		b = append(b, ']')
	}
	return append(b, ']')
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

// appendString quotes s as encoding/json does. Plain printable ASCII, what
// nearly every path is, is copied; anything else (control bytes, quotes,
// HTML-sensitive <>&, non-ASCII, invalid UTF-8) is left to encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// ParseStored reads a stored tree and its top files.
func ParseStored(b []byte) (*Node, []File, error) {
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 && t[0] == '{' { // the first form
		var v1 struct {
			Node
			TopFiles []File `json:"top_files"`
		}
		if err := json.Unmarshal(b, &v1); err != nil {
			return nil, nil, fmt.Errorf("stored tree: %w", err)
		}
		return &v1.Node, v1.TopFiles, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber() // sizes and nanoseconds do not fit a float64
	var v []any
	if err := d.Decode(&v); err != nil {
		return nil, nil, fmt.Errorf("stored tree: %w", err)
	}
	if len(v) != 3 || v[0] != json.Number(strconv.Itoa(storedVersion)) {
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
		if len(next) == 0 || total+len(next) > maxNodes {
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
