package files_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/sandbox"
)

// TestKeptNamesStayTheTenantsAndDoctorLeavesThem: a tenant that races
// every put of its own (making its entry at the target after xfsq's last
// look) gets one kept name per raced put, each beside its target inside
// its tree and holding what it made there; no other project's tree, and
// nothing outside the root, gets any. doctor --fix, past
// reservation_ttl, removes a real stray temporary file beside them and
// leaves every kept file and directory where it is.
func TestKeptNamesStayTheTenantsAndDoctorLeavesThem(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := newSandbox(t, dsn, "omni", "beta")
		if _, _, err := s.m.SetSetting(ctx, "reservation_ttl", "1s"); err != nil {
			t.Fatal(err)
		}
		tree := filepath.Join(s.root, "projects/omni")
		other := filepath.Join(s.root, "projects/beta")
		outside := t.TempDir()
		os.MkdirAll(filepath.Join(tree, "sub"), 0o755)
		const raced = 12
		for i := range raced {
			p := "doc"
			if i%2 == 1 {
				p = "sub/doc"
			}
			target := filepath.Join(tree, p)
			os.RemoveAll(target)
			os.WriteFile(target, []byte("old"), 0o644)
			*files.RaceHook = func(point string) {
				if point != "put:verified" {
					return
				}
				// Made beside, then renamed over the target: a new inode
				// while the old one still stands (a removal first may hand
				// the tenant's file the old one's number, which is then
				// the file the write replaces).
				if i%3 == 2 { // a directory of the tenant's
					os.Mkdir(target+".t", 0o755)
					os.WriteFile(filepath.Join(target+".t", "inner"), []byte(fmt.Sprint("mine-", i)), 0o644)
					os.Remove(target)
				} else {
					os.WriteFile(target+".t", []byte(fmt.Sprint("mine-", i)), 0o644)
				}
				os.Rename(target+".t", target)
			}
			_, err := s.l.Put(ctx, "omni", "", p, strings.NewReader("new data"), 8)
			*files.RaceHook = nil
			if err != nil {
				t.Fatalf("put %d: %v", i, err)
			}
		}
		keptName := regexp.MustCompile(`^doc\.xfsq-kept-[0-9a-f]{8}$`)
		kept := map[string]string{}
		for _, dir := range []string{tree, filepath.Join(tree, "sub")} {
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.Contains(e.Name(), "xfsq-kept") {
					if !keptName.MatchString(e.Name()) {
						t.Errorf("kept name %q", e.Name())
					}
					p := filepath.Join(dir, e.Name())
					if e.IsDir() {
						p = filepath.Join(p, "inner")
					}
					b, _ := os.ReadFile(p)
					kept[p] = string(b)
				}
			}
		}
		if len(kept) != raced {
			t.Errorf("%d kept entries, want one per raced put (%d): %v", len(kept), raced, kept)
		}
		for _, dir := range []string{other, outside, s.root, filepath.Join(s.root, "projects")} {
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.Contains(e.Name(), "xfsq-kept") {
					t.Errorf("a kept name in %s: %s", dir, e.Name())
				}
			}
		}
		stray := filepath.Join(tree, sandbox.TempPrefix+"stray")
		os.WriteFile(stray, make([]byte, 4096), 0o644)
		time.Sleep(1100 * time.Millisecond)
		if _, err := s.m.Doctor(ctx, true); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(stray); !os.IsNotExist(err) {
			t.Errorf("doctor --fix left the stray temporary file (%v): the test would not tell", err)
		}
		for p, was := range kept {
			if b, err := os.ReadFile(p); err != nil || string(b) != was || !strings.HasPrefix(was, "mine-") {
				t.Errorf("after doctor --fix %s holds %q (%v), was %q", p, b, err, was)
			}
		}
	})
}

// TestPutKeepsATenantFileOnTheOldInodeNumber: a tenant that, after xfsq's
// last look at the target, removes the file the write replaces and makes
// its own there at once may be handed the freed inode's number (ext4
// reuses it). That file is still not the one the write replaces: it is
// kept beside the target, not unlinked as the replaced file.
func TestPutKeepsATenantFileOnTheOldInodeNumber(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "omni")
	tree := filepath.Join(s.root, "projects/omni")
	reused := 0
	for i := range 8 {
		target := filepath.Join(tree, "doc")
		os.WriteFile(target, []byte("old"), 0o644)
		var before, after unix.Stat_t
		unix.Lstat(target, &before)
		*files.RaceHook = func(point string) {
			if point == "put:verified" {
				os.Remove(target)
				os.WriteFile(target, []byte(fmt.Sprint("mine-", i)), 0o644)
				unix.Lstat(target, &after)
			}
		}
		_, err := s.l.Put(ctx, "omni", "", "doc", strings.NewReader("new data"), 8)
		*files.RaceHook = nil
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		if after.Ino == before.Ino {
			reused++
		}
		kept, _ := filepath.Glob(filepath.Join(tree, "doc.xfsq-kept-*"))
		if len(kept) != 1 {
			t.Errorf("try %d (inode number reused: %v): %d kept entries, want the tenant's file kept", i, after.Ino == before.Ino, len(kept))
		} else if b, _ := os.ReadFile(kept[0]); string(b) != fmt.Sprint("mine-", i) {
			t.Errorf("try %d: the kept file holds %q", i, b)
		}
		for _, k := range kept {
			os.Remove(k)
		}
	}
	t.Logf("the tenant's file had the old inode's number in %d of 8 tries", reused)
}
