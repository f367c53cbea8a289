package fallback

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/quota"
)

func du(t *testing.T, args ...string) uint64 {
	t.Helper()
	out, err := exec.Command("du", args...).Output()
	if err != nil {
		t.Fatalf("du %v: %v", args, err)
	}
	n, err := strconv.ParseUint(strings.Fields(string(out))[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Walk counts what du counts: allocated bytes and inodes, hard links once,
// symlinks not followed.
func TestWalkMatchesDu(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "big"), make([]byte, 1<<20), 0o644)
	os.MkdirAll(filepath.Join(dir, "a/b/c"), 0o755)
	os.Mkdir(filepath.Join(dir, "empty"), 0o755)
	for i, size := range []int{0, 1, 4095, 4097, 300_000} {
		os.WriteFile(filepath.Join(dir, "a", fmt.Sprint("f", i)), make([]byte, size), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "a/b/c/deep"), make([]byte, 70_000), 0o644)
	os.Link(filepath.Join(dir, "a/f4"), filepath.Join(dir, "hardlink"))
	os.Symlink(outside, filepath.Join(dir, "to-outside"))
	os.Symlink(filepath.Join(outside, "big"), filepath.Join(dir, "to-big"))
	os.Symlink("/nonexistent", filepath.Join(dir, "dangling"))
	sparse, _ := os.Create(filepath.Join(dir, "sparse"))
	sparse.Truncate(50 << 20)
	sparse.Close()

	u, err := Walk(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := du(t, "-s", "--block-size=1", dir); u.Bytes != want {
		t.Errorf("bytes = %d, du says %d", u.Bytes, want)
	}
	if want := du(t, "-s", "--inodes", dir); u.Inodes != want {
		t.Errorf("inodes = %d, du says %d", u.Inodes, want)
	}
	if missing, err := Walk(filepath.Join(dir, "nope")); err != nil || missing != (quota.Usage{}) {
		t.Errorf("missing tree: %+v, %v; want zero", missing, err)
	}
}

// The backend reads the recorded trees at every call: a tree recorded, or
// limits changed, after it was made (by another process) are seen.
func TestBackendReadsTheRecordEachCall(t *testing.T) {
	for _, withLookup := range []bool{false, true} {
		t.Run(map[bool]string{false: "trees", true: "lookup"}[withLookup], func(t *testing.T) { testReadsTheRecordEachCall(t, withLookup) })
	}
}

func testReadsTheRecordEachCall(t *testing.T, withLookup bool) {
	recorded := map[quota.ProjectID]Tree{}
	var one Lookup
	if withLookup {
		one = func(id quota.ProjectID) (Tree, bool, error) { tr, ok := recorded[id]; return tr, ok, nil }
	}
	b := New("ext4: no project quota", func() (map[quota.ProjectID]Tree, error) { return recorded, nil }, one)
	if b.Name() != "fallback (ext4: no project quota)" {
		t.Errorf("Name = %q", b.Name())
	}
	dir := t.TempDir()
	if err := b.SetLimits(7, quota.Limits{BytesHard: 1}); err == nil {
		t.Error("limits for an unrecorded ID accepted")
	}
	if err := b.Assign(dir, 7); err == nil {
		t.Error("assign of an unrecorded ID accepted")
	}
	l := quota.Limits{BytesHard: 1 << 20, InodesHard: 10}
	recorded[7] = Tree{Dir: dir, Limits: l}
	if err := b.Assign(dir, 7); err != nil {
		t.Error(err)
	}
	if err := b.SetLimits(7, l); err != nil {
		t.Error(err)
	}
	os.WriteFile(filepath.Join(dir, "f"), make([]byte, 10_000), 0o644)
	q, err := b.Get(7)
	if err != nil || q.Limits != l || q.Inodes != 2 || q.Bytes < 10_000 {
		t.Errorf("Get = %+v, %v", q, err)
	}
	l2 := quota.Limits{BytesHard: 2 << 20}
	recorded[7] = Tree{Dir: dir, Limits: l2}
	if all, err := b.All(); err != nil || all[7].Limits != l2 || all[7].Bytes != q.Bytes {
		t.Errorf("All after the record changed = %+v, %v", all, err)
	}
	if q, _ := b.Get(8); q != (quota.Quota{ID: 8}) {
		t.Errorf("unknown ID: %+v", q)
	}
}
