package files_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/internal/testsupport/prereq"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/quota/fallback"
)

// btrfsRoot mounts a fresh btrfs on a loop image as a sandbox root until t
// ends.
func btrfsRoot(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		prereq.Missing(t, "the btrfs tests mount a loop image: run them as root")
		return ""
	}
	if _, err := exec.LookPath("mkfs.btrfs"); err != nil {
		prereq.Missing(t, "mkfs.btrfs is missing: apt-get install btrfs-progs (scripts/deps.sh test)")
		return ""
	}
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "img"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if f, err := os.Create(img); err != nil {
		t.Fatal(err)
	} else {
		f.Truncate(300 << 20)
		f.Close()
	}
	if out, err := exec.Command("mkfs.btrfs", "-q", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.btrfs: %v\n%s", err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		prereq.Missing(t, "mount a btrfs loop image: "+err.Error()+": "+string(out))
		return ""
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	return mnt
}

// On a btrfs root a tenant may make subvolumes in its tree: they are on
// the tree's mount, on a device of their own, and number their inodes
// afresh. What a subvolume holds is the tenant's and is counted; and a
// file in it that happens to carry the inode number of a file written
// through xfsq at the tree's top must not be credited that write's ledger
// row when it is removed. (xfsq cannot write into a subvolume: its rename
// from the tree's top would cross devices; so no overwrite credits one.)
func TestBtrfsSubvolumesAreCountedAndNumberedApart(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		root := btrfsRoot(t)
		s := newSandboxAt(t, root, dsn, "a")
		ws := filepath.Join(root, "projects", "a")
		sv := filepath.Join(ws, "sv")
		if out, err := exec.Command("btrfs", "subvolume", "create", sv).CombinedOutput(); err != nil {
			t.Fatalf("btrfs subvolume create: %v\n%s", err, out)
		}
		if err := os.WriteFile(filepath.Join(sv, "big"), make([]byte, 1<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("sv", filepath.Join(ws, "link")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.m.Top(ctx, "a", "", inventory.Options{Depth: 3}); err != nil {
			t.Fatal(err)
		}
		if used := s.used("a"); used.Bytes < 1<<20 {
			t.Fatalf("usage %d bytes after a walk: the subvolume's 1 MiB is not counted", used.Bytes)
		}
		// Refused before the body is read (a client must not send 1 GiB to
		// hear that), and leaving no directory made for it behind.
		for _, p := range []string{"sv/new", "sv/big", "sv/d/e/new", "link/new", "link/d/new"} {
			read := false
			body := &onFirstRead{fn: func() { read = true }, r: strings.NewReader("x")}
			_, err := s.l.Put(ctx, "a", "", p, body, 1)
			if err == nil || !strings.Contains(err.Error(), "subvolume") || errkind.Of(err) != errkind.Input {
				t.Errorf("a put of %s into the subvolume: %v; want it refused as bad input saying why", p, err)
			}
			if read {
				t.Errorf("a put of %s into the subvolume read the body before refusing it", p)
			}
		}
		if _, err := os.Lstat(filepath.Join(sv, "d")); err == nil {
			t.Error("a refused put into the subvolume left the directories it made")
		}
		s.limit("a", 8<<20, 0)
		if err := s.put("a", "F", make([]byte, 1<<20), true); err != nil {
			t.Fatal(err)
		}
		var f unix.Stat_t
		if err := unix.Stat(filepath.Join(ws, "F"), &f); err != nil {
			t.Fatal(err)
		}
		// Make files in the subvolume until one takes F's number.
		twin := ""
		for i := 0; i < 20000 && twin == ""; i++ {
			p := filepath.Join(sv, "f"+strconv.Itoa(i))
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			var st unix.Stat_t
			if unix.Stat(p, &st) == nil && st.Ino == f.Ino {
				twin = p
			}
		}
		if twin == "" {
			t.Fatalf("no file in the subvolume took inode %d", f.Ino)
		}
		if err := os.WriteFile(twin, make([]byte, 1<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(ws, twin)
		if _, err := s.l.Remove(ctx, "a", "", rel, files.RemoveOptions{}); err != nil {
			t.Fatal(err)
		}
		// Bytes only: the empty files the shell made since the walk are
		// inodes nothing has counted yet, as any shell write until a walk.
		fresh, err := fallback.Walk(ws)
		if err != nil {
			t.Fatal(err)
		}
		if used := s.used("a"); used.Bytes < fresh.Bytes {
			t.Errorf("after removing the subvolume's twin of F: the ledger counts %d bytes, below a fresh walk's %d: F's row was credited", used.Bytes, fresh.Bytes)
		}
	})
}
