package files_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/internal/testsupport/prereq"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/quota/fallback"
)

// dirsGrowInBlocks skips (fails in CI) unless directories on the
// filesystem of dir take more blocks as names are added to them (ext4,
// XFS; not tmpfs, whose directories take none): elsewhere the attack
// below has nothing to exploit and its test could not fail.
func dirsGrowInBlocks(t *testing.T, dir string) {
	t.Helper()
	probe := filepath.Join(dir, "probe")
	if err := os.Mkdir(probe, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(probe)
	blocks := func() int64 {
		var st unix.Stat_t
		if err := unix.Stat(probe, &st); err != nil {
			t.Fatal(err)
		}
		return st.Blocks
	}
	before := blocks()
	for i := range 200 {
		if err := os.WriteFile(filepath.Join(probe, longName(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if blocks() <= before {
		prereq.Missing(t, "directories on the test filesystem take no blocks as they grow (tmpfs?): run the tests with TMPDIR on ext4 or XFS")
	}
}

// longName is the i-th 200-character name.
func longName(i int) string {
	n := fmt.Sprintf("%d-", i)
	return n + strings.Repeat("n", 200-len(n))
}

// countDirs is how many directories the tree at dir holds, itself included.
func countDirs(t *testing.T, dir string) uint64 {
	t.Helper()
	var n uint64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Zero-byte uploads with 200-character names grow their directory by a
// block every score of names, and nothing charged that growth: 1,200 of
// them into one directory of a 100 KiB tree were all admitted, and a walk
// then found 380 KiB. Every block a write adds to the tree, its
// directories' growth included, is charged; a fresh walk never finds the
// tree past its hard limit by more than a block per directory (the growth
// of the last name admitted, which only the link can measure), nor the
// ledger below the walk. The same with the names spread over many
// directories, which puts make as they go.
func TestDirectoryGrowthIsCharged(t *testing.T) {
	cases := []struct {
		name  string
		path  func(i int) string
		named bool
	}{
		{"one directory", func(i int) string { return "d/" + longName(i) }, false},
		{"many directories", func(i int) string { return fmt.Sprintf("d%02d/%s", i%40, longName(i)) }, false},
		{"a new directory each", func(i int) string { return longName(i) + "/f" }, false},
		// Without O_TMPFILE each body has a name at the tree's top first.
		{"named temporary files", func(i int) string { return "d/" + longName(i) }, true},
	}
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				s := newSandbox(t, dsn, "omni")
				dirsGrowInBlocks(t, s.root)
				*files.NoTmpfile = c.named
				t.Cleanup(func() { *files.NoTmpfile = false })
				const hard = 100 << 10
				s.limit("omni", hard, 0)
				admitted := 0
				for i := range 1200 {
					err := s.put("omni", c.path(i), nil, true)
					switch {
					case err == nil:
						admitted++
					case !refusedBy(err, "bytes_hard"):
						t.Fatalf("upload %d: %v", i, err)
					}
				}
				tree := filepath.Join(s.root, "projects", "omni")
				walk, err := fallback.Walk(tree)
				if err != nil {
					t.Fatal(err)
				}
				dirs := countDirs(t, tree)
				t.Logf("%d of 1200 admitted; a walk finds %d bytes in %d directories; the ledger says %d", admitted, walk.Bytes, dirs, s.used("omni").Bytes)
				if walk.Bytes > hard+dirs*block {
					t.Errorf("a fresh walk finds %d bytes, past the hard limit of %d by more than a block for each of the %d directories", walk.Bytes, uint64(hard), dirs)
				}
				if admitted == 0 {
					t.Error("nothing admitted: the test measured nothing")
				}
				s.notBelowWalk("omni", "after the uploads")
			})
		}
	})
}

// A replacement goes through a name at the tree's top (the exchange needs
// one), and a tenant adding names there while xfsq places the file grows
// the top directory within the interval xfsq measures: what the top grew
// by is charged, so the ledger's bytes are never below a fresh walk's.
// (The tenant's empty files take no blocks; their inodes, made outside
// xfsq, wait for the walk as any tenant's write does.)
func TestAReplacementChargesTheTopsGrowth(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := newSandbox(t, dsn, "omni")
		dirsGrowInBlocks(t, s.root)
		tree := filepath.Join(s.root, "projects", "omni")
		if err := s.put("omni", "d/f", []byte("old"), true); err != nil {
			t.Fatal(err)
		}
		s.walkBaseline("omni")
		*files.RaceHook = func(point string) {
			if point != "put:named" {
				return
			}
			for i := range 200 {
				if err := os.WriteFile(filepath.Join(tree, longName(i)), nil, 0o644); err != nil {
					t.Error(err)
				}
			}
		}
		t.Cleanup(func() { *files.RaceHook = nil })
		if err := s.put("omni", "d/f", []byte("new"), true); err != nil {
			t.Fatal(err)
		}
		*files.RaceHook = nil
		walk, err := fallback.Walk(tree)
		if err != nil {
			t.Fatal(err)
		}
		if used := s.used("omni"); used.Bytes < walk.Bytes {
			t.Errorf("the ledger counts %d bytes, below a fresh walk's %d: the top's growth during the replacement went uncharged", used.Bytes, walk.Bytes)
		}
	})
}
