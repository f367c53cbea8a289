package gitindex

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/gittest"
	"golang.org/x/sys/unix"
)

// readRepo reads the repository whose .git is in dir as the walk does.
func readRepo(t testing.TB, dir string) (*Index, string) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	rf := NewFinder(context.Background(), fd, Options{})
	rf.abs = []string{dir}
	ix, why, err := rf.Read(fd, ".")
	if err != nil {
		t.Fatal(err)
	}
	return ix, why
}

// names is what an index tracks as git ls-files --sparse lists it.
func (ix *Index) names() []string {
	out := slices.Clone(ix.files)
	for d := range ix.sparse {
		out = append(out, d+"/")
	}
	slices.Sort(out)
	return out
}

// Every index git writes reads back as exactly what git ls-files lists
// (xfsq never runs git; the test uses it to make the fixtures).
func TestReadIndexMatchesGit(t *testing.T) {
	many := []string{"a.go", "dist/app.js", "dist/vendor/lib.js", "docs/a very long name with spaces.md", "z/y/x/w/deep.txt", "x.log"}
	for i := range 30 {
		many = append(many, fmt.Sprintf("pkg/f%02d.go", i))
	}
	cases := []struct {
		name  string
		init  []string // git init's arguments
		setup func(t *testing.T, dir string)
	}{
		{name: "v2", setup: func(t *testing.T, dir string) {}},
		{name: "v3 with intent-to-add and skip-worktree", setup: func(t *testing.T, dir string) {
			gittest.WriteFiles(t, dir, "later.log")
			gittest.Run(t, dir, "add", "-N", "--", "later.log")
			gittest.Run(t, dir, "update-index", "--skip-worktree", "dist/app.js")
		}},
		{name: "v4", setup: func(t *testing.T, dir string) {
			gittest.Run(t, dir, "update-index", "--index-version", "4")
		}},
		{name: "split index with replacements, deletions and additions", setup: func(t *testing.T, dir string) {
			gittest.Run(t, dir, "update-index", "--split-index")
			os.WriteFile(filepath.Join(dir, "dist/app.js"), []byte("changed"), 0o644)
			gittest.WriteFiles(t, dir, "dist/new.js")
			gittest.Run(t, dir, "add", "dist/app.js", "dist/new.js")
			gittest.Run(t, dir, "rm", "-q", "--cached", "pkg/f07.go")
		}},
		{name: "core.splitIndex", setup: func(t *testing.T, dir string) {
			gittest.Run(t, dir, "config", "core.splitIndex", "true")
			gittest.WriteFiles(t, dir, "dist/new.js")
			gittest.Run(t, dir, "add", "dist/new.js")
			gittest.Run(t, dir, "rm", "-q", "--cached", "a.go")
		}},
		{name: "split index in version 4", setup: func(t *testing.T, dir string) {
			gittest.Run(t, dir, "update-index", "--index-version", "4")
			gittest.Run(t, dir, "update-index", "--split-index")
			gittest.WriteFiles(t, dir, "dist/new.js")
			gittest.Run(t, dir, "add", "dist/new.js")
		}},
		{name: "sparse index", setup: func(t *testing.T, dir string) {
			gittest.Run(t, dir, "sparse-checkout", "init", "--cone", "--sparse-index")
			gittest.Run(t, dir, "sparse-checkout", "set", "docs")
		}},
		{name: "optional extensions (TREE, UNTR, EOIE, IEOT)", setup: func(t *testing.T, dir string) {
			gittest.Run(t, dir, "config", "index.recordEndOfIndexEntries", "true")
			gittest.Run(t, dir, "config", "index.recordOffsetTable", "true")
			gittest.Run(t, dir, "config", "index.threads", "2")
			gittest.Run(t, dir, "update-index", "--untracked-cache")
			gittest.Run(t, dir, "status", "--porcelain")
			gittest.Run(t, dir, "update-index", "--force-write-index")
		}},
		{name: "sha256", init: []string{"--object-format=sha256"}, setup: func(t *testing.T, dir string) {}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			gittest.Run(t, dir, append([]string{"init", "-q"}, c.init...)...)
			gittest.WriteFiles(t, dir, many...)
			gittest.WriteFiles(t, dir, "untracked.log")
			gittest.Run(t, dir, "add", "--", ".")
			gittest.Run(t, dir, "rm", "-q", "--cached", "untracked.log")
			gittest.Run(t, dir, "commit", "-q", "-m", "one")
			c.setup(t, dir)
			ix, why := readRepo(t, dir)
			if why != "" {
				t.Fatalf("refused: %s", why)
			}
			want := strings.Split(strings.TrimSuffix(gittest.Output(t, dir, "ls-files", "-z", "--sparse"), "\x00"), "\x00")
			slices.Sort(want)
			if got := ix.names(); !reflect.DeepEqual(got, want) {
				t.Errorf("tracked %v\nwant    %v", got, want)
			}
			if strings.Contains(c.name, "sparse") && len(ix.sparse) == 0 {
				t.Fatal("git wrote no sparse directory entry: the case tests nothing")
			}
			if strings.Contains(c.name, "split") {
				if m, _ := filepath.Glob(filepath.Join(dir, ".git/sharedindex.*")); len(m) == 0 {
					t.Fatal("git wrote no shared index: the case tests nothing")
				}
			}
		})
	}
	t.Run("no index yet", func(t *testing.T) {
		dir := t.TempDir()
		gittest.Run(t, dir, "init", "-q")
		if ix, why := readRepo(t, dir); why != "" || len(ix.files) != 0 {
			t.Errorf("a fresh repository: %v, %q", ix.files, why)
		}
	})
}

// withExtension inserts an extension before an index's checksum.
func withExtension(data []byte, sig, body string) []byte {
	ext := append([]byte(sig), binary.BigEndian.AppendUint32(nil, uint32(len(body)))...)
	ext = append(ext, body...)
	out := append(slices.Clone(data[:len(data)-sha1.Size]), ext...)
	return gittest.FixSum(append(out, make([]byte, sha1.Size)...))
}

// gitIndexBytes is the index git writes for a few files, in a version.
func gitIndexBytes(t testing.TB, version string) []byte {
	dir := t.TempDir()
	gittest.Run(t, dir, "init", "-q")
	gittest.WriteFiles(t, dir, "a.go", "dist/app.js", "dist/vendor/lib.js", "x.log")
	gittest.Run(t, dir, "add", ".")
	gittest.Run(t, dir, "update-index", "--index-version", version)
	data, err := os.ReadFile(filepath.Join(dir, ".git/index"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// What git cannot read (or xfsq does not understand) is refused, never
// read as "nothing tracked"; what git skips is skipped.
func TestReadIndexRefusesWhatItCannotRead(t *testing.T) {
	good := gitIndexBytes(t, "2")
	want, err := parseIndex(good, 20)
	if err != nil {
		t.Fatal(err)
	}
	set := func(off int, b ...byte) []byte {
		d := slices.Clone(good)
		copy(d[off:], b)
		return gittest.FixSum(d)
	}
	cases := []struct {
		name string
		data []byte
		ok   bool
	}{
		{"version 5", set(4, 0, 0, 0, 5), false},
		{"version 1", set(4, 0, 0, 0, 1), false},
		{"bad checksum", append(slices.Clone(good[:len(good)-1]), good[len(good)-1]^1), false},
		{"truncated", good[:len(good)-30], false},
		{"truncated to the header", good[:12], false},
		{"garbage", bytes.Repeat([]byte("garbage!"), 40), false},
		{"more entries than bytes", set(8, 0x7f, 0xff, 0xff, 0xff), false},
		{"unknown required extension", withExtension(good, "abcd", ""), false},
		{"required extension that is not a letter", withExtension(good, "1xyz", "xyz"), false},
		{"extension longer than the file", withExtension(good, "TREE", "")[:len(good)+4], false},
		{"unknown optional extension", withExtension(good, "ABCD", "anything"), true},
		{"empty link extension", withExtension(good, "link", ""), false},
		{"null checksum (index.skipHash)", append(slices.Clone(good[:len(good)-20]), make([]byte, 20)...), true},
	}
	for _, c := range cases {
		got, err := parseIndex(c.data, 20)
		switch {
		case c.ok && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.ok && !reflect.DeepEqual(got.files, want.files):
			t.Errorf("%s: tracked %v, want %v", c.name, got.files, want.files)
		case !c.ok && err == nil:
			t.Errorf("%s: read as tracking %v", c.name, got.files)
		}
	}
}

// Any bytes either parse or are refused with an error — never a panic —
// and what parses is sorted and unique, as the walk's look-ups need.
func FuzzParseIndex(f *testing.F) {
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x01"))
	f.Add([]byte("DIRC\x00\x00\x00\x04\x00\x00\x00\x02" + strings.Repeat("\x00", 62) + "\x00a\x00"))
	for _, v := range []string{"2", "3", "4"} {
		data := gitIndexBytes(f, v)
		f.Add(data)
		f.Add(withExtension(data, "link", strings.Repeat("\x00", 20)+"\x00\x00\x00\x40\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x00"))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, d := range [][]byte{data, gittest.FixSum(data)} {
			ix, err := parseIndex(d, 20)
			if err != nil {
				continue
			}
			if !slices.IsSorted(ix.files) || len(slices.Compact(slices.Clone(ix.files))) != len(ix.files) {
				t.Fatalf("files not sorted and unique: %q", ix.files)
			}
		}
		readEWAH(data)
	})
}

// A split index and its shared index, as git writes them.
func gitSplitIndexBytes(t testing.TB) (split, shared []byte) {
	dir := t.TempDir()
	gittest.Run(t, dir, "init", "-q")
	for i := range 20 {
		gittest.WriteFiles(t, dir, fmt.Sprintf("f%02d", i))
	}
	gittest.Run(t, dir, "add", ".")
	gittest.Run(t, dir, "update-index", "--split-index")
	gittest.WriteFiles(t, dir, "new")
	os.WriteFile(filepath.Join(dir, "f03"), []byte("changed"), 0o644)
	gittest.Run(t, dir, "add", "new", "f03")
	gittest.Run(t, dir, "rm", "-q", "--cached", "f07")
	split, _ = os.ReadFile(filepath.Join(dir, ".git/index"))
	m, _ := filepath.Glob(filepath.Join(dir, ".git/sharedindex.*"))
	if len(m) != 1 {
		t.Fatalf("shared indexes %v", m)
	}
	shared, _ = os.ReadFile(m[0])
	return split, shared
}

// Merging any split index with any shared index gives entries or an
// error, never a panic, and never names a shared entry beyond the end.
func FuzzMergeSplit(f *testing.F) {
	split, shared := gitSplitIndexBytes(f)
	f.Add(split, shared)
	f.Add(split, split)
	f.Fuzz(func(t *testing.T, splitData, sharedData []byte) {
		ctx := context.Background()
		s, err := readIndex(ctx, bytes.NewReader(gittest.FixSum(splitData)), int64(len(splitData)), 20, nil)
		if err != nil {
			return
		}
		b, err := readIndex(ctx, bytes.NewReader(gittest.FixSum(sharedData)), int64(len(sharedData)), 20, nil)
		if err != nil {
			return
		}
		if entries, err := mergeSplit(s, b); err == nil && len(entries) > len(s.entries)+len(b.entries) {
			t.Fatalf("%d entries from %d and %d", len(entries), len(s.entries), len(b.entries))
		}
	})
}

// The split index fixture really holds a deletion and a replacement, so
// the merge TestReadIndexMatchesGit checks is the bitmaps', not a no-op.
func TestSplitIndexFixtureUsesBothBitmaps(t *testing.T) {
	split, _ := gitSplitIndexBytes(t)
	s, err := readIndex(context.Background(), bytes.NewReader(split), int64(len(split)), 20, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !s.linked || lastBit(s.del) == 0 || lastBit(s.rep) == 0 {
		t.Errorf("split index: linked %v, delete bits to %d, replace bits to %d", s.linked, lastBit(s.del), lastBit(s.rep))
	}
}

// ieotIndex is a version 4 index of two entries whose second starts an IEOT
// block with a stored suffix that, read after the first entry, names
// "dist/adist/keep.js", and read alone, as git's threaded reader reads a
// block's first entry, names "dist/keep.js". offsets, when given, replace
// the blocks' offsets.
func ieotIndex(offsets ...uint32) []byte {
	return v4WithIEOT([]v4Entry{{0, "dist/a", 6}, {0, "dist/keep.js", 0xfff}}, func(offs []uint32) [][2]uint32 {
		if len(offsets) == 2 {
			offs = offsets
		}
		return [][2]uint32{{offs[0], 1}, {offs[1], 1}}
	})
}

// git loading an index's IEOT blocks in threads (index.threads) reads each
// block's first entry of a version 4 index with no previous path: a
// tenant's index can make that name differ from the one a reader in one
// pass gives. Both stay tracked; blocks that are not the entries are
// refused. git itself, with threads, lists the file as tracked.
func TestAnIEOTBlockStartIsReadAsGitsThreadsReadIt(t *testing.T) {
	ix, err := parseIndex(ieotIndex(), 20)
	if err != nil {
		t.Fatal(err)
	}
	if !ix.Tracks("dist/keep.js") || !ix.Tracks("dist/a") {
		t.Errorf("tracked %v; want dist/keep.js (as git's threads read it) and dist/a", ix.files)
	}
	for name, offs := range map[string][]uint32{"a block offset inside an entry": {12, 20}, "a block offset past the entries": {12, 9000}} {
		if _, err := parseIndex(ieotIndex(offs...), 20); err == nil {
			t.Errorf("%s: read", name)
		}
	}
	dir := t.TempDir()
	gittest.Run(t, dir, "init", "-q")
	gittest.Run(t, dir, "config", "index.threads", "4")
	if err := os.WriteFile(filepath.Join(dir, ".git/index"), ieotIndex(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := gittest.Output(t, dir, "ls-files"); !strings.Contains(out, "dist/keep.js") {
		t.Errorf("git ls-files with threads: %q; the fixture must be an index git reads so", out)
	}
}

// eoie is an EOIE extension naming off as where the extensions begin.
func eoie(off int) string {
	return string(binary.BigEndian.AppendUint32(nil, uint32(off))) + string(make([]byte, sha1.Size))
}

// git loading in threads reads the extensions from where the last
// extension, EOIE, says they begin: an EOIE that points elsewhere than the
// end of the entries (an attack hid a split index's link extension inside
// an optional one, so git read a split index and xfsq did not) makes the
// index unreadable; one that points there is read.
func TestAnEOIEPointingElsewhereIsRefused(t *testing.T) {
	good := gitIndexBytes(t, "2")
	entriesEnd := len(good) - sha1.Size
	if _, err := parseIndex(withExtension(good, "EOIE", eoie(entriesEnd)), 20); err != nil {
		t.Errorf("an EOIE pointing at the end of the entries: %v", err)
	}
	hidden := "link" + string(binary.BigEndian.AppendUint32(nil, sha1.Size)) + string(make([]byte, sha1.Size))
	withHidden := withExtension(good, "ZZZZ", hidden)
	if _, err := parseIndex(withExtension(withHidden, "EOIE", eoie(entriesEnd+8)), 20); err == nil {
		t.Error("an EOIE pointing inside an optional extension was read")
	}
	// git finds EOIE at the tail, whatever extension's data holds it.
	eoieExt := "EOIE" + string(binary.BigEndian.AppendUint32(nil, 4+sha1.Size)) + eoie(entriesEnd+8)
	if _, err := parseIndex(withExtension(good, "ZZZZ", hidden+eoieExt), 20); err == nil {
		t.Error("an EOIE hidden at the tail of an optional extension's data was read")
	}
	if _, err := parseIndex(withExtension(good, "ZZZZ", "anything at all"), 20); err != nil {
		t.Errorf("an optional extension with no EOIE at the tail: %v", err)
	}
}

// A version 4 index whose every path is the one before and a byte more
// names, in a few hundred kilobytes, megabytes of paths (an attack's 2.6 MB
// one took a sweep to 1.2 GB, and 13 MB would take 20 GB): it is refused
// once its paths come to more than a bounded multiple of its size, or one
// of them is longer than a path can be.
func TestAVersion4IndexCannotNameMorePathsThanItHolds(t *testing.T) {
	build := gittest.V4Growing
	if _, err := parseIndex(build(3000, "a"), 20); err == nil || !strings.Contains(err.Error(), "paths come to more than") {
		t.Errorf("3,000 paths growing by a byte each (4.5 MB of paths in a 200 KB file): %v, want it refused", err)
	}
	if _, err := parseIndex(build(5, strings.Repeat("a", 1000)), 20); err == nil || !strings.Contains(err.Error(), "a path of more than") {
		t.Errorf("a path of 5,000 bytes: %v, want it refused", err)
	}
	if ix, err := parseIndex(build(50, "a"), 20); err != nil || len(ix.files) != 50 {
		t.Errorf("50 short paths: %v", err)
	}
}

// v4Entry is one entry of a hand-made version 4 index.
type v4Entry struct {
	strip   byte
	suffix  string
	nameLen uint16
}

// v4WithBlocks is a version 4 index of entries with an IEOT extension whose
// blocks start at the entries named (and an EOIE, as git writes them).
func v4WithBlocks(entries []v4Entry, blockStarts ...int) []byte {
	return v4WithIEOT(entries, func(offs []uint32) [][2]uint32 {
		var blocks [][2]uint32
		for i, start := range blockStarts {
			end := len(entries)
			if i+1 < len(blockStarts) {
				end = blockStarts[i+1]
			}
			blocks = append(blocks, [2]uint32{offs[start], uint32(end - start)})
		}
		return blocks
	})
}

// v4WithIEOT is a version 4 index of entries with the IEOT blocks (offset,
// count) that blocks gives for the entries' offsets, and an EOIE.
func v4WithIEOT(entries []v4Entry, blocks func(offs []uint32) [][2]uint32) []byte {
	buf := append([]byte("DIRC"), 0, 0, 0, 4)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(entries)))
	var offs []uint32
	for _, en := range entries {
		offs = append(offs, uint32(len(buf)))
		e := make([]byte, 40, 64)
		binary.BigEndian.PutUint32(e[24:], 0o100644)
		sum := sha1.Sum([]byte(en.suffix))
		e = append(binary.BigEndian.AppendUint16(append(e, sum[:]...), en.nameLen), en.strip)
		buf = append(append(buf, e...), append([]byte(en.suffix), 0)...)
	}
	ext := len(buf)
	ieot := binary.BigEndian.AppendUint32(nil, 1)
	for _, b := range blocks(offs) {
		ieot = binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(ieot, b[0]), b[1])
	}
	hdr := append([]byte("IEOT"), binary.BigEndian.AppendUint32(nil, uint32(len(ieot)))...)
	buf = append(append(buf, hdr...), ieot...)
	hsum := sha1.Sum(hdr)
	eoie := append(binary.BigEndian.AppendUint32(nil, uint32(ext)), hsum[:]...)
	buf = append(append(buf, append([]byte("EOIE"), binary.BigEndian.AppendUint32(nil, uint32(len(eoie)))...)...), eoie...)
	return gittest.FixSum(append(buf, make([]byte, sha1.Size)...))
}

// In a block of several entries, git's threads name every entry after the
// first from the name they gave the one before: a tenant's index can make
// all of them differ from a one-pass reading. Each stays tracked under
// both, and git itself, with threads, lists the threaded names.
func TestEveryEntryOfAnIEOTBlockIsReadAsGitsThreadsReadIt(t *testing.T) {
	data := v4WithBlocks([]v4Entry{{0, "zz/a", 4}, {1, "b", 0xfff}, {1, "keep.log", 0xfff}}, 0, 1)
	ix, err := parseIndex(data, 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"zz/a", "zz/b", "zz/keep.log", "b", "keep.log"} {
		if !ix.Tracks(p) {
			t.Errorf("%s not tracked; tracked %v", p, ix.files)
		}
	}
	if _, err := parseIndex(v4WithBlocks([]v4Entry{{0, "zz/a", 4}, {0, "b", 0xfff}, {3, "c", 0xfff}}, 0, 1), 20); err == nil {
		t.Error("a block whose later entry strips more than its threaded name holds was read")
	}
	dir := t.TempDir()
	gittest.Run(t, dir, "init", "-q")
	gittest.Run(t, dir, "config", "index.threads", "4")
	if err := os.WriteFile(filepath.Join(dir, ".git/index"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := gittest.Output(t, dir, "ls-files"); !strings.Contains(out, "\nkeep.log") && !strings.HasPrefix(out, "keep.log") {
		t.Errorf("git ls-files with threads: %q; the fixture must be an index git reads so", out)
	}
}

// A name whose flags give its length is read as that many bytes: where a
// block's reader keeps less of the name before than a one-pass reader
// (nothing, at the block's start), it takes other bytes for the suffix,
// past its NUL into the entries after, and names what a one-pass reading
// never sees (an attack made git's threads track dist/x.log so). Such an
// index cannot be read.
func TestABlockReadFromOtherBytesIsRefused(t *testing.T) {
	entries := []v4Entry{{0, "zz/a", 4}, {1, "b", 4}, {1, "c", 4}, {1, "d", 4}}
	data := v4WithBlocks(entries, 0, 1)
	if _, err := parseIndex(data, 20); err == nil {
		t.Fatal("a block whose first name its flags make longer than its suffix was read")
	}
	// The same with the lengths git's threads agree on reads.
	if _, err := parseIndex(v4WithBlocks([]v4Entry{{0, "zz/a", 4}, {4, "zz/b", 4}, {1, "c", 4}}, 0, 1), 20); err != nil {
		t.Errorf("a block starting with a whole name: %v", err)
	}
	dir := t.TempDir()
	gittest.Run(t, dir, "init", "-q")
	if err := os.WriteFile(filepath.Join(dir, ".git/index"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	ls := func(threads string) string {
		out, err := exec.Command("git", "-C", dir, "-c", "index.threads="+threads, "ls-files").CombinedOutput()
		return fmt.Sprintf("%s %v", out, err)
	}
	if one, threaded := ls("1"), ls("4"); one == threaded {
		t.Errorf("git reads the fixture the same with threads and without (%q): it shows nothing", one)
	}
}
