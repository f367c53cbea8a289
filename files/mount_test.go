package files_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/quota/fallback"
	"github.com/xfsq/xfsq/sandbox"
)

// A tenant writes a file, covers its directory with a tmpfs so that a walk
// through the mounts would not see it, waits for the walk, and uncovers it:
// the file now looks walked. Removing or overwriting it through xfsq must
// not credit blocks the baseline never counted, or the ledger reads less
// than the tree holds and admission takes writes past the hard limit. The
// walk looks beneath the mount, so the file is in the baseline and the
// credit is the tenant's due.
func TestCreditsAfterAMountIsGone(t *testing.T) {
	for _, overwrite := range []bool{false, true} {
		name := "rm"
		if overwrite {
			name = "overwrite"
		}
		t.Run(name, func(t *testing.T) {
			storetest.ForEach(t, func(t *testing.T, dsn string) {
				s := newSandbox(t, dsn, "a")
				const limit, hidden = 1 << 20, 600 << 10
				ws := filepath.Join(s.root, "projects", "a")
				dir := filepath.Join(ws, "x")
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "hidden"), make([]byte, hidden), 0o644); err != nil {
					t.Fatal(err)
				}
				mounttest.Tmpfs(t, dir)
				time.Sleep(2 * sandbox.CtimeLag)
				if _, err := s.m.Top(ctx, "a", "", inventory.Options{Depth: 3}); err != nil {
					t.Fatal(err)
				}
				s.limit("a", limit, 0)
				if err := unix.Unmount(dir, 0); err != nil {
					t.Fatal(err)
				}
				if overwrite {
					// Reserved whole beside the old file, as XFS would: refused.
					if err := s.put("a", "x/hidden", make([]byte, hidden), true); !refusedBy(err, "bytes_hard") {
						t.Errorf("a %d KiB overwrite beside the uncovered %d KiB file: %v, want refused by bytes_hard", hidden>>10, hidden>>10, err)
					}
				} else if _, err := s.l.Remove(ctx, "a", "", "x/hidden", files.RemoveOptions{}); err != nil {
					t.Fatal(err)
				}
				s.notBelowWalk("a", name+" of the file the mount had hidden")
				// Fill what admission says is left: a fresh walk stays within the limit.
				used := s.used("a")
				if used.Bytes+block < limit {
					if err := s.put("a", "fill", make([]byte, limit-used.Bytes-block), true); err != nil {
						t.Logf("fill: %v", err)
					}
				}
				if fresh, err := fallback.Walk(ws); err != nil {
					t.Fatal(err)
				} else if fresh.Bytes > limit {
					t.Errorf("a fresh walk finds %d bytes, over the hard limit of %d", fresh.Bytes, limit)
				}
			})
		})
	}
}

// A tenant bind-mounts another tenant's tree inside its own: top of its
// tree, or of the directory holding the mount, shows none of the other
// tree's names or bytes (the walks go beneath the mount, to the empty
// directory the tenant's own filesystem holds there).
func TestTopShowsNothingOfABindMountedTree(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "a", "b")
	if err := os.WriteFile(filepath.Join(s.root, "projects", "b", "secret-of-b"), make([]byte, 256<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	x := filepath.Join(s.root, "projects", "a", "d", "x")
	if err := os.MkdirAll(x, 0o755); err != nil {
		t.Fatal(err)
	}
	mounttest.Bind(t, filepath.Join(s.root, "projects", "b"), x)
	for _, p := range []string{".", "d"} {
		res, err := s.l.Top(ctx, "a", "", p, inventory.Options{Depth: 3}, nil)
		if err != nil {
			t.Fatalf("top a %s: %v", p, err)
		}
		out, _ := json.Marshal(res)
		if strings.Contains(string(out), "secret-of-b") || res.Root.SizeBytes >= 256<<10 {
			t.Errorf("top a %s shows b's tree through the bind mount: %d bytes, %s", p, res.Root.SizeBytes, out)
		}
	}
}

// A tenant's FUSE mount whose server never answers hangs no listing: the
// tree's own shows the mount point as other, and one of the mount point
// is refused as another mount, both at once.
func TestListingsNeverWaitOnAStalledFUSE(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "a")
	fz := filepath.Join(s.root, "projects", "a", "fz")
	if err := os.Mkdir(fz, 0o755); err != nil {
		t.Fatal(err)
	}
	mounttest.StalledFUSE(t, fz)
	for _, p := range []string{".", "fz"} {
		type answer struct {
			entries []files.Entry
			err     error
		}
		got := make(chan answer, 1)
		go func() {
			e, _, err := s.l.ListPage(ctx, "a", "", p, "", 0)
			got <- answer{e, err}
		}()
		select {
		case a := <-got:
			switch p {
			case ".":
				if a.err != nil || !slices.ContainsFunc(a.entries, func(e files.Entry) bool { return e.Name == "fz" && e.Type == "other" }) {
					t.Errorf("ls .: %v %+v; want fz listed as other", a.err, a.entries)
				}
			default:
				if a.err == nil || !strings.Contains(a.err.Error(), "another mount") {
					t.Errorf("ls fz: %v %+v; want it refused as another mount", a.err, a.entries)
				}
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("ls %s waited on the stalled FUSE server", p)
		}
	}
}

// Nor does any operation on a name behind such a mount, or on the mount
// point itself: resolving fz/x component by component would ask the
// stalled server to look x up. Each is refused as another mount instead,
// and the symlink l -> fz leads there no better.
func TestNothingWaitsOnANameBehindAStalledFUSE(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "a")
	ws := filepath.Join(s.root, "projects", "a")
	fz := filepath.Join(ws, "fz")
	if err := os.Mkdir(fz, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("fz", filepath.Join(ws, "l")); err != nil {
		t.Fatal(err)
	}
	mounttest.StalledFUSE(t, fz)
	ops := []struct {
		name string
		run  func(p string) error
	}{
		{"ls", func(p string) error { _, _, err := s.l.ListPage(ctx, "a", "", p, "", 0); return err }},
		{"get", func(p string) error {
			f, _, err := s.l.Open(ctx, "a", "", p)
			if f != nil {
				f.Close()
			}
			return err
		}},
		{"put", func(p string) error { return s.put("a", p, []byte("x"), true) }},
		{"rm", func(p string) error {
			_, err := s.l.Remove(ctx, "a", "", p, files.RemoveOptions{Recursive: true})
			return err
		}},
		{"top", func(p string) error { _, err := s.l.Top(ctx, "a", "", p, inventory.Options{Depth: 3}, nil); return err }},
	}
	for _, op := range ops {
		for _, p := range []string{"fz", "fz/x", "fz/x/y", "l/x"} {
			got := make(chan error, 1)
			go func() { got <- op.run(p) }()
			select {
			case err := <-got:
				if err == nil {
					t.Errorf("%s %s: no error; want it refused (it is behind a mount)", op.name, p)
				} else if !strings.Contains(err.Error(), "mount") {
					t.Errorf("%s %s: %v; want it refused as on another mount", op.name, p, err)
				} else if errkind.Of(err) != errkind.Input {
					t.Errorf("%s %s: %v is %v, want bad input", op.name, p, err, errkind.Of(err))
				}
			case <-time.After(5 * time.Second):
				t.Errorf("%s %s waited on the stalled FUSE server", op.name, p)
			}
		}
	}
}

// top of a directory inside a tree walks through no symlink, even one that
// stays inside the tree: the walk is made beneath the tenant's mounts,
// where a link could lead anywhere the copy holds. The refusal is bad
// input naming the path (exit 2), never an internal error.
func TestTopOfAPathThroughASymlinkIsRefused(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "a")
	ws := filepath.Join(s.root, "projects", "a")
	if err := os.MkdirAll(filepath.Join(ws, "d", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("d", filepath.Join(ws, "l")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"l", "l/x"} {
		_, err := s.l.Top(ctx, "a", "", p, inventory.Options{Depth: 3}, nil)
		if k := errkind.Of(err); k != errkind.Input || !strings.Contains(err.Error(), "symlink") {
			t.Errorf("top a %s: %v (kind %s); want bad input naming the symlink", p, err, k)
		}
	}
	if _, err := s.l.Top(ctx, "a", "", "d/x", inventory.Options{Depth: 3}, nil); err != nil {
		t.Errorf("top a d/x: %v", err)
	}
}

// A tenant binding another file over one of its own, on and off as fast
// as it can, never gets the other file's size into a listing or its
// content into a read: the mount is judged from the very statx that is
// shown, and the open refuses a mount made since the check.
func TestAMountRacingAListingShowsNothingOfIt(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "a")
	ws := filepath.Join(s.root, "projects", "a")
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, make([]byte, 777), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "f"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mounttest.Bind(t, outside, filepath.Join(ws, "f")) // proves we may mount (or fails as a prerequisite)
	unix.Unmount(filepath.Join(ws, "f"), unix.MNT_DETACH)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			unix.Mount(outside, filepath.Join(ws, "f"), "", unix.MS_BIND, "")
			unix.Unmount(filepath.Join(ws, "f"), unix.MNT_DETACH)
		}
	}()
	deadline := time.Now().Add(3 * time.Second)
	for n := 0; time.Now().Before(deadline); n++ {
		entries, _, _ := s.l.ListPage(ctx, "a", "", ".", "", 0)
		for _, e := range entries {
			if e.Name == "f" && e.Size == 777 {
				t.Fatalf("listing %d showed the file mounted over f: %+v", n, e)
			}
		}
		if f, e, err := s.l.Open(ctx, "a", "", "f"); err == nil {
			f.Close()
			if e.Size == 777 {
				t.Fatalf("open %d opened the file mounted over f", n)
			}
		}
	}
	close(stop)
	<-done
}
