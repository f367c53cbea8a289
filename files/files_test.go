package files_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/internal/testsupport/tenanttest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/quota/fallback"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

var ctx = context.Background()

// testRoot is a fallback root with a manager and a file layer.
type testRoot struct {
	t    testing.TB
	root string
	dsn  string
	st   *store.Store
	m    *sandbox.Manager
	l    *files.Layer
}

func newSandbox(t testing.TB, dsn string, projects ...string) *testRoot {
	t.Helper()
	return newSandboxAt(t, t.TempDir(), dsn, projects...)
}

// newSandboxAt is newSandbox on a root of the caller's (a filesystem of its own).
func newSandboxAt(t testing.TB, root, dsn string, projects ...string) *testRoot {
	t.Helper()
	// A host of its own: several sandboxes may share one test database.
	st, err := store.Open(ctx, dsn, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m, _, err := sandbox.Init(ctx, sandbox.Options{Root: root, Store: st, Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range projects {
		if _, err := m.Add(ctx, p, sandbox.AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	l, err := m.Files().ForWrites(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	block = files.BlockSize(int(d.Fd()))
	d.Close()
	return &testRoot{t: t, root: root, dsn: dsn, st: st, m: m, l: l}
}

func (s *testRoot) used(name string) quota.Usage {
	s.t.Helper()
	_, u, _, err := s.st.Account(ctx, store.TreeKey{Project: name, Area: area.Workspace})
	if err != nil {
		s.t.Fatal(err)
	}
	return u
}

// softLimit sets the workspace's byte soft limit of a project.
func (s *testRoot) softLimit(name string, soft uint64) {
	s.t.Helper()
	if _, err := s.m.Set(ctx, name, "", sandbox.LimitChange{BytesSoft: &soft}); err != nil {
		s.t.Fatal(err)
	}
}

// limit sets the workspace limits of a project.
func (s *testRoot) limit(name string, bytesHard, inodesHard uint64) {
	s.t.Helper()
	if _, err := s.m.Set(ctx, name, "", sandbox.LimitChange{BytesHard: &bytesHard, InodesHard: &inodesHard}); err != nil {
		s.t.Fatal(err)
	}
}

func (s *testRoot) put(name, p string, data []byte, known bool) error {
	size := int64(len(data))
	if !known {
		size = -1
	}
	_, err := s.l.Put(ctx, name, "", p, bytes.NewReader(data), size)
	return err
}

func (s *testRoot) content(name, p string) []byte {
	data, err := os.ReadFile(filepath.Join(s.root, "projects", name, p))
	if err != nil {
		return nil
	}
	return data
}

func refusedBy(err error, limit string) bool {
	var le *quota.LimitError
	return errors.As(err, &le) && le.Limit == limit
}

// block is the test filesystem's allocation unit, set by newSandbox.
var block uint64 = 4096

// Exactly at a limit succeeds, one byte over is refused: bytes and inodes,
// new files and replacements, known and unknown sizes, on both drivers.
func TestBoundaries(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		for _, known := range []bool{true, false} {
			name := map[bool]string{true: "known-size", false: "streamed"}[known]
			t.Run(name, func(t *testing.T) {
				s := newSandbox(t, dsn, "omni")
				u := s.used("omni")
				s.limit("omni", u.Bytes+3*block, u.Inodes+2)

				if err := s.put("omni", "a", make([]byte, 2*block), known); err != nil {
					t.Fatalf("2 blocks into room for 3: %v", err)
				}
				if err := s.put("omni", "b", make([]byte, block+1), known); !refusedBy(err, "bytes_hard") {
					t.Errorf("one byte past the byte limit: %v, want bytes_hard", err)
				}
				if s.content("omni", "b") != nil {
					t.Error("a refused write left a file behind")
				}
				if err := s.put("omni", "b", make([]byte, block), known); err != nil {
					t.Fatalf("exactly to the byte limit: %v", err)
				}
				if err := s.put("omni", "c", nil, known); !refusedBy(err, "inodes_hard") {
					t.Errorf("one inode past the inode limit: %v, want inodes_hard", err)
				}
				// Replacements are admitted as XFS admits them: the new file
				// whole beside the old one, which the rename then frees. A
				// full tree cannot swap a file even for one of the same size.
				old := bytes.Repeat([]byte("x"), int(2*block))
				if err := s.put("omni", "a", old, known); !refusedBy(err, "inodes_hard") && !refusedBy(err, "bytes_hard") {
					t.Errorf("replacing with the same size in a full tree: %v, want a hard limit", err)
				}
				if !bytes.Equal(s.content("omni", "a"), make([]byte, 2*block)) {
					t.Error("a refused replacement changed the old content")
				}
				// With room for both it can, and the old file's blocks and
				// inode come back once the rename has unlinked it.
				s.limit("omni", u.Bytes+5*block, u.Inodes+3)
				if err := s.put("omni", "a", old, known); err != nil {
					t.Fatalf("replacing with the same size, room for both: %v", err)
				}
				if got := s.used("omni"); got.Bytes != u.Bytes+3*block || got.Inodes != u.Inodes+2 {
					t.Errorf("after the replacement: usage %+v, want %d bytes %d inodes (the old file credited)", got, u.Bytes+3*block, u.Inodes+2)
				}
				if err := s.put("omni", "a", make([]byte, 2*block+1), known); !refusedBy(err, "bytes_hard") {
					t.Errorf("a replacement of 3 blocks with 2 free: %v, want bytes_hard", err)
				}
				if !bytes.Equal(s.content("omni", "a"), old) {
					t.Error("a refused replacement changed the old content")
				}
				if err := s.put("omni", "a", []byte("small"), known); err != nil {
					t.Fatalf("shrinking replacement: %v", err)
				}
				s.limit("omni", u.Bytes+5*block, u.Inodes+2)
				if err := s.put("omni", "c", make([]byte, block), known); !refusedBy(err, "inodes_hard") {
					t.Errorf("after shrinking, a new file is still one inode too many: %v", err)
				}
				if got := s.used("omni"); got.Bytes != u.Bytes+2*block || got.Inodes != u.Inodes+2 {
					t.Errorf("usage %+v, want %d bytes %d inodes", got, u.Bytes+2*block, u.Inodes+2)
				}
				if res, _ := s.st.Reservations(ctx); len(res) != 0 {
					t.Errorf("reservations left: %+v", res)
				}
			})
		}
	})
}

// countingReader counts what admission read of a body.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// A body of unknown length is read at most to its allowance plus one byte.
func TestStreamReadsAtMostAllowancePlusOne(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "omni")
	u := s.used("omni")
	allowance := uint64(10 * block)
	s.limit("omni", u.Bytes+allowance, 0)
	body := &countingReader{r: bytes.NewReader(make([]byte, 64<<20))}
	_, err := s.l.Put(ctx, "omni", "", "big", body, -1)
	if !refusedBy(err, "bytes_hard") {
		t.Fatalf("64 MiB stream into 40 KiB: %v", err)
	}
	if got := uint64(body.n.Load()); got > allowance+1 {
		t.Errorf("read %d bytes of the body, want at most allowance+1 = %d", got, allowance+1)
	}
	var le *quota.LimitError
	errors.As(err, &le)
	if le.Max != u.Bytes+allowance {
		t.Errorf("refusal names limit %d, want %d: %v", le.Max, u.Bytes+allowance, err)
	}
	s.l.MaxFileBytes = 1000
	for _, known := range []bool{true, false} {
		if err := s.put("omni", "m", make([]byte, 1000), known); err != nil {
			t.Errorf("exactly max_file_bytes (known=%v): %v", known, err)
		}
		if err := s.put("omni", "m", make([]byte, 1001), known); !refusedBy(err, "max_file_bytes") {
			t.Errorf("one byte over max_file_bytes (known=%v): %v", known, err)
		}
	}
	if err := s.put("omni", "short", []byte("abc"), true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.l.Put(ctx, "omni", "", "short", strings.NewReader("ab"), 3); err == nil || !strings.Contains(err.Error(), "ended after 2 of the 3 bytes") {
		t.Errorf("body shorter than declared: %v", err)
	}
	if _, err := s.l.Put(ctx, "omni", "", "short", strings.NewReader("abcd"), 3); err == nil || !strings.Contains(err.Error(), "longer than the 3 bytes") {
		t.Errorf("body longer than declared: %v", err)
	}
	if got := string(s.content("omni", "short")); got != "abc" {
		t.Errorf("failed writes changed the file to %q", got)
	}
}

func TestRootBudget(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "a", "b")
	_, _, root, err := s.st.Account(ctx, store.TreeKey{Project: "a", Area: "workspace"})
	if err != nil {
		t.Fatal(err)
	}
	s.l.RootBudget = root + 3*block
	if err := s.put("a", "f", make([]byte, 2*block), true); err != nil {
		t.Fatal(err)
	}
	if err := s.put("b", "f", make([]byte, 2*block), true); !refusedBy(err, "root_budget") {
		t.Errorf("second project past the shared budget: %v", err)
	}
	if err := s.put("b", "f", make([]byte, block), true); err != nil {
		t.Errorf("exactly to the shared budget: %v", err)
	}
}

func TestSoftLimitEventOncePerCrossing(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := newSandbox(t, dsn, "omni")
		soft := s.used("omni").Bytes + 2*block
		s.softLimit("omni", soft)
		events := func() int {
			evs, err := s.st.Events(ctx, store.EventFilter{Type: journal.TypeQuotaExceeded})
			if err != nil {
				t.Fatal(err)
			}
			return len(evs)
		}
		for i, p := range []string{"a", "b", "c", "d"} {
			if err := s.put("omni", p, make([]byte, block), true); err != nil {
				t.Fatal(err)
			}
			want := map[bool]int{false: 0, true: 1}[i >= 2]
			if got := events(); got != want {
				t.Errorf("after %d blocks: %d storage.quota_exceeded events, want %d", i+1, got, want)
			}
		}
		// A removal credits only what a walk saw (files put since are
		// credited nothing until the next walk): walk, as the hourly pass does.
		s.walkBaseline("omni")
		for _, p := range []string{"c", "d", "b"} {
			if _, err := s.l.Remove(ctx, "omni", "", p, files.RemoveOptions{Recursive: true}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.put("omni", "e", make([]byte, 2*block), true); err != nil {
			t.Fatal(err)
		}
		if got := events(); got != 2 {
			t.Errorf("after dropping under the soft limit and crossing again: %d events, want 2", got)
		}
	})
}

// On the fallback, as on XFS, a tree over its soft limit past the grace
// (soft_grace) takes no write that would leave it over: new files and
// streamed bodies are refused (507's kind, Denied), the file not made, and
// a replacement that takes no more still passes; back under, the timer
// stops and writes pass again.
func TestASoftLimitPastItsGraceRefusesWrites(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := newSandbox(t, dsn, "omni")
		soft := s.used("omni").Bytes + 2*block
		s.softLimit("omni", soft)
		s.l.SoftGrace = time.Hour
		for _, p := range []string{"a", "b", "c"} { // over the soft limit at b, within its grace after
			if err := s.put("omni", p, make([]byte, block), true); err != nil {
				t.Fatalf("put %s within the grace: %v", p, err)
			}
		}
		s.l.SoftGrace = 0 // the grace has run out
		for _, known := range []bool{true, false} {
			err := s.put("omni", "d", make([]byte, block), known)
			if !refusedBy(err, "bytes_soft") || errkind.Of(err) != errkind.Denied || !strings.Contains(err.Error(), "whose grace ended") {
				t.Errorf("a new file past the grace (size known %v): %v (%v); want a bytes_soft refusal naming the grace's end", known, err, errkind.Of(err))
			}
			if s.content("omni", "d") != nil {
				t.Errorf("the refused file was made")
			}
		}
		if err := s.put("omni", "c", nil, true); err != nil {
			t.Errorf("a replacement that shrinks the file past the grace: %v", err)
		}
		s.walkBaseline("omni")
		for _, p := range []string{"b", "c"} {
			if _, err := s.l.Remove(ctx, "omni", "", p, files.RemoveOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.put("omni", "e", make([]byte, block), true); err != nil {
			t.Errorf("back under the soft limit, a write to it: %v", err)
		}
	})
}

// A write in progress is admitted once more when it commits, from the tree
// as it is then without its own reservation: a soft limit whose grace ran
// out, or a hard limit lowered, while its body arrived refuses it, as the
// kernel on XFS refuses the allocation; nothing of it lands and nothing
// stays reserved. And a write in progress never starts a grace timer: the
// timer goes by what is committed, as XFS's by what is allocated.
func TestAWriteInProgressIsAdmittedAgainAtItsCommit(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		// streaming starts a put of blocks blocks, size declared, and
		// sends one; finish sends the rest and returns the put's error,
		// abort hangs up instead.
		var abort func()
		streaming := func(s *testRoot, p string, blocks uint64) (finish func() error) {
			pr, pw := io.Pipe()
			done := make(chan error, 1)
			go func() {
				_, err := s.l.Put(ctx, "omni", "", p, pr, int64(blocks*block))
				pr.CloseWithError(err)
				done <- err
			}()
			if _, err := pw.Write(make([]byte, block)); err != nil {
				t.Fatalf("the put of %s took no body: %v", p, err)
			}
			abort = func() { pw.CloseWithError(errors.New("the client went away")); <-done }
			return func() error {
				go func() { pw.Write(make([]byte, (blocks-1)*block)); pw.Close() }()
				return <-done
			}
		}
		key := store.TreeKey{Project: "omni", Area: area.Workspace}
		noneLeft := func(s *testRoot, p string) {
			t.Helper()
			if s.content("omni", p) != nil {
				t.Errorf("the refused %s landed", p)
			}
			if rs, err := s.st.Reservations(ctx); err != nil || len(rs) != 0 {
				t.Errorf("reservations left: %v %v", rs, err)
			}
		}
		t.Run("a grace that ends while the body arrives", func(t *testing.T) {
			s := newSandbox(t, dsn, "omni")
			soft := s.used("omni").Bytes + 2*block
			s.softLimit("omni", soft)
			s.l.SoftGrace = 0
			finish := streaming(s, "big", 16)
			if err := s.put("omni", "a", make([]byte, 3*block), true); err != nil { // over: the grace starts, and is over
				t.Fatal(err)
			}
			if err := finish(); !refusedBy(err, "bytes_soft") {
				t.Errorf("a body that arrived past the grace: %v, want a bytes_soft refusal", err)
			}
			noneLeft(s, "big")
		})
		t.Run("a hard limit lowered while the body arrives", func(t *testing.T) {
			s := newSandbox(t, dsn, "omni")
			s.limit("omni", s.used("omni").Bytes+64*block, 0)
			finish := streaming(s, "big", 16)
			s.limit("omni", s.used("omni").Bytes-16*block+4*block, 0)
			if err := finish(); !refusedBy(err, "bytes_hard") {
				t.Errorf("a body that arrived after its limit was lowered: %v, want a bytes_hard refusal", err)
			}
			noneLeft(s, "big")
		})
		t.Run("a hard limit raised and put back while the body arrives", func(t *testing.T) {
			s := newSandbox(t, dsn, "omni")
			base := s.used("omni").Bytes
			s.limit("omni", base+20*block, 0)
			finish := streaming(s, "big", 16)
			s.limit("omni", base+1000*block, 0)
			if err := s.put("omni", "other", make([]byte, 100*block), true); err != nil {
				t.Fatal(err)
			}
			s.limit("omni", base+20*block, 0) // what big was admitted against
			if err := finish(); !refusedBy(err, "bytes_hard") {
				t.Errorf("a body landing past the limit in force: %v, want a bytes_hard refusal", err)
			}
			noneLeft(s, "big")
		})
		t.Run("a refused body leaves no directory", func(t *testing.T) {
			s := newSandbox(t, dsn, "omni")
			u := s.used("omni")
			s.limit("omni", 0, u.Inodes+10)
			finish := streaming(s, "x/y/z/f", 8)
			s.limit("omni", 0, u.Inodes+1) // the write needs 4
			if err := finish(); !refusedBy(err, "inodes_hard") || !strings.Contains(err.Error(), "3 files on disk") {
				t.Errorf("a body after its inode limit was lowered: %v, want an inodes_hard refusal counting 3 files on disk", err)
			}
			if _, err := os.Lstat(filepath.Join(s.root, "projects/omni/x")); !os.IsNotExist(err) {
				t.Errorf("the refused write made its directories: %v", err)
			}
			noneLeft(s, "x/y/z/f")
		})
		t.Run("the project removed while the body arrives", func(t *testing.T) {
			for _, named := range []bool{false, true} {
				// A subtest each: a sandbox's host is its test's name, and
				// a host name binds one root.
				t.Run(fmt.Sprintf("named=%v", named), func(t *testing.T) {
					*files.NoTmpfile = named
					s := newSandbox(t, dsn, "omni")
					finish := streaming(s, "big", 16)
					if _, err := s.m.Remove(ctx, "omni", sandbox.RemoveOptions{Force: true}); err != nil {
						t.Fatal(err)
					}
					if err := finish(); err == nil || errkind.Of(err) != errkind.Conflict {
						t.Errorf("a put into a project removed under it: %v (%v), want a conflict", err, errkind.Of(err))
					}
					if rs, err := s.st.Reservations(ctx); err != nil || len(rs) != 0 {
						t.Errorf("reservations left: %v %v", rs, err)
					}
				})
			}
			*files.NoTmpfile = false
		})
		t.Run("a walk while the body arrives leaves it to its reservation", func(t *testing.T) {
			// On the named-temporary path (a filesystem without O_TMPFILE)
			// the walk meets the body arriving: it leaves it out, as the
			// reservation counts it; counted twice, it refused the write
			// that reserved the room, and over-counted the tree until the
			// next walk.
			*files.NoTmpfile = true
			defer func() { *files.NoTmpfile = false }()
			s := newSandbox(t, dsn, "omni")
			s.limit("omni", s.used("omni").Bytes+500*block, 0)
			pr, pw := io.Pipe()
			done := make(chan error, 1)
			go func() { _, err := s.l.Put(ctx, "omni", "", "big", pr, int64(400*block)); done <- err }()
			pw.Write(make([]byte, 300*block))
			// Wait until the 300 blocks are on disk in the temporary file.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				temps, _ := filepath.Glob(filepath.Join(s.root, "projects/omni", sandbox.TempPrefix+"*"))
				var st unix.Stat_t
				if len(temps) == 1 && unix.Stat(temps[0], &st) == nil && uint64(st.Size) >= 300*block {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the body's first 300 blocks never reached its temporary file (%v)", temps)
				}
			}
			time.Sleep(2 * sandbox.CtimeLag)
			if _, err := s.m.Snapshot(ctx, sandbox.SnapshotOptions{}); err != nil { // the hourly pass's walk
				t.Fatal(err)
			}
			go func() { pw.Write(make([]byte, 100*block)); pw.Close() }()
			if err := <-done; err != nil {
				t.Errorf("a body that fitted its reservation, walked while it arrived: %v", err)
			}
			real, err := fallback.Walk(filepath.Join(s.root, "projects/omni"))
			if err != nil {
				t.Fatal(err)
			}
			if got := s.used("omni"); got.Bytes != real.Bytes || got.Inodes != real.Inodes {
				t.Errorf("after the write the tree counts %+v, a walk finds %+v: the body counted twice", got, real)
			}
		})
		t.Run("a tenant's file renamed onto the body's name is counted", func(t *testing.T) {
			*files.NoTmpfile = true
			defer func() { *files.NoTmpfile = false }()
			s := newSandbox(t, dsn, "omni")
			top := filepath.Join(s.root, "projects/omni")
			if err := os.WriteFile(filepath.Join(top, "x"), make([]byte, 150*block), 0o644); err != nil {
				t.Fatal(err)
			}
			snapshot := func() {
				time.Sleep(2 * sandbox.CtimeLag)
				if _, err := s.m.Snapshot(ctx, sandbox.SnapshotOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			snapshot() // x counted
			streaming(s, "big", 190)
			temps, _ := filepath.Glob(filepath.Join(top, sandbox.TempPrefix+"*"))
			if len(temps) != 1 {
				t.Fatalf("temporary files: %v", temps)
			}
			if err := os.Rename(filepath.Join(top, "x"), temps[0]); err != nil { // within the body's room
				t.Fatal(err)
			}
			snapshot()
			abort()
			s.notBelowWalk("omni", "after the put ended (the tenant's file left out?)")
		})
		t.Run("a tenant writing into the body's file refuses it", func(t *testing.T) {
			*files.NoTmpfile = true
			defer func() { *files.NoTmpfile = false }()
			for _, known := range []bool{true, false} {
				t.Run(map[bool]string{true: "size known", false: "chunked"}[known], func(t *testing.T) {
					s := newSandbox(t, dsn, "omni")
					top := filepath.Join(s.root, "projects/omni")
					pr, pw := io.Pipe()
					done := make(chan error, 1)
					size := int64(-1)
					if known {
						size = int64(190 * block)
					}
					go func() { _, err := s.l.Put(ctx, "omni", "", "big", pr, size); pr.CloseWithError(err); done <- err }()
					pw.Write(make([]byte, block))
					temps, _ := filepath.Glob(filepath.Join(top, sandbox.TempPrefix+"*"))
					if len(temps) != 1 {
						t.Fatalf("temporary files: %v", temps)
					}
					f, err := os.OpenFile(temps[0], os.O_WRONLY, 0)
					if err != nil {
						t.Fatal(err)
					}
					f.WriteAt(make([]byte, 14*block), int64(190*block)) // past where xfsq writes
					f.Close()
					go func() {
						if known {
							pw.Write(make([]byte, 189*block))
						}
						pw.Close()
					}()
					if err := <-done; errkind.Of(err) != errkind.Conflict || !strings.Contains(err.Error(), "written to") {
						t.Errorf("size known %v: a body the tenant wrote into: %v, want a conflict saying so", known, err)
					}
					if s.content("omni", "big") != nil {
						t.Errorf("size known %v: the body written into was placed", known)
					}
					s.notBelowWalk("omni", fmt.Sprintf("size known %v, after the refusal", known))
				})
			}
		})
		t.Run("blocks a tenant adds to the body are counted with it", func(t *testing.T) {
			*files.NoTmpfile = true
			defer func() { *files.NoTmpfile = false }()
			s := newSandbox(t, dsn, "omni")
			finish := streaming(s, "big", 4)
			temps, _ := filepath.Glob(filepath.Join(s.root, "projects/omni", sandbox.TempPrefix+"*"))
			if len(temps) != 1 {
				t.Fatalf("temporary files: %v", temps)
			}
			f, err := os.OpenFile(temps[0], os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			// Blocks past the end, the size unchanged.
			if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, int64(4*block), int64(100*block)); err != nil {
				f.Close()
				t.Fatalf("fallocate on the temporary file: %v", err)
			}
			f.Close()
			if err := finish(); err != nil {
				t.Fatalf("a body whose size the tenant left alone: %v", err)
			}
			s.notBelowWalk("omni", "after a body with blocks added landed")
		})
		t.Run("a write in progress starts no grace timer", func(t *testing.T) {
			s := newSandbox(t, dsn, "omni")
			soft := s.used("omni").Bytes + 8*block
			s.softLimit("omni", soft)
			s.l.SoftGrace = 0
			streaming(s, "big", 16) // reserved: over the soft limit, not on disk
			if err := s.put("omni", "a", make([]byte, block), true); err != nil {
				t.Fatal(err)
			}
			if b, _, err := s.st.GraceStarts(ctx, key); err != nil || !b.IsZero() {
				t.Errorf("a reservation started the grace timer at %v (%v)", b, err)
			}
			abort()
			noneLeft(s, "big")
			if err := s.put("omni", "b", make([]byte, 8*block), true); err != nil {
				t.Errorf("the first write over the soft limit, with no grace running: %v", err)
			}
			if err := s.put("omni", "c", make([]byte, block), true); !refusedBy(err, "bytes_soft") {
				t.Errorf("a write after the grace (0) started by b: %v, want bytes_soft", err)
			}
		})
	})
}

func TestRemoveIsJournalled(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "omni")
	s.put("omni", "d/x", make([]byte, 3*block), true)
	s.walkBaseline("omni") // a removal credits what a walk saw
	before := s.used("omni")
	res, err := s.l.Remove(ctx, "omni", "", "d", files.RemoveOptions{Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 2 || res.Bytes < 3*block {
		t.Errorf("remove result %+v", res)
	}
	if after := s.used("omni"); after.Bytes != before.Bytes-res.Bytes || after.Inodes != before.Inodes-2 {
		t.Errorf("usage after rm %+v, before %+v, freed %+v", after, before, res)
	}
	evs, _ := s.st.Events(ctx, store.EventFilter{Type: journal.TypeEvicted})
	var states []string
	for _, ev := range evs {
		var rec struct{ Path, State, Reason string }
		json.Unmarshal(ev.Payload, &rec)
		if rec.Reason != "manual" || rec.Path != "projects/omni/d" {
			t.Errorf("evicted record %s", ev.Payload)
		}
		states = append(states, rec.State)
	}
	if strings.Join(states, ",") != "done,pending" {
		t.Errorf("evicted states %v, want pending then done", states)
	}
	// Refused as bad input; the message names no CLI flag, the hint says
	// what removes a whole tree.
	_, err = s.l.Remove(ctx, "omni", "", ".")
	if err == nil || errkind.Of(err) != errkind.Input {
		t.Fatalf("removing the tree itself through files rm: %v, want it refused as input", err)
	}
	if msg, hint := err.Error(), errkind.FixOf(err); strings.Contains(msg, "--") || !strings.Contains(msg, "it is the tree itself") ||
		len(hint.Refs) != 1 || !reflect.DeepEqual(hint.Refs[0], errkind.Do(errkind.OpProjectRemove, "", "purge", "")) {
		t.Errorf("removing the tree itself: message %q, hint %q; want the reason alone, the command as the hint", msg, hint)
	}
}

// A directory goes only when the caller asks for a recursive removal (as
// rm -r), and uploads/ and inbox/ are emptied, never removed.
func TestRemoveDirectoryNeedsRecursive(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "omni")
	s.put("omni", "d/x", make([]byte, block), true)
	s.put("omni", "uploads/a/b", make([]byte, block), true)
	s.put("omni", "uploads/c", make([]byte, block), true)
	_, err := s.l.Remove(ctx, "omni", "", "d")
	if errkind.Of(err) != errkind.Input || !strings.Contains(errkind.HintOf(err), "recursive") {
		t.Errorf("a directory without Recursive: %v (hint %q), want input naming a recursive removal", err, errkind.HintOf(err))
	}
	if _, err := s.l.Remove(ctx, "omni", "", "d/x"); err != nil {
		t.Errorf("a file without Recursive: %v", err)
	}
	for _, p := range []string{"uploads", "inbox", "uploads/"} {
		if _, err := s.l.Remove(ctx, "omni", "", p); errkind.Of(err) != errkind.Input {
			t.Errorf("%s without Recursive: %v, want input", p, err)
		}
	}
	res, err := s.l.Remove(ctx, "omni", "", "uploads", files.RemoveOptions{Recursive: true})
	if err != nil || res.Entries != 3 || res.Path != "projects/omni/uploads" {
		t.Errorf("emptying uploads: %+v %v, want 3 entries removed", res, err)
	}
	entries, err := os.ReadDir(filepath.Join(s.root, "projects/omni/uploads"))
	if err != nil || len(entries) != 0 {
		t.Errorf("uploads after emptying: %v %v, want it there and empty", entries, err)
	}
	if _, err := s.l.Remove(ctx, "omni", "", "inbox", files.RemoveOptions{Recursive: true}); err != nil {
		t.Errorf("emptying an empty inbox: %v", err)
	}
}

// Removing a directory that holds a hard link to a file that stays frees
// nothing of that file: the ledger must not drop below a fresh walk
// (over-counts, never under-counts), or admission would let writes past
// the limit until the next walk.
func TestRemoveHardLinkedFileKeepsItsBytes(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "omni")
	if err := s.put("omni", "keep", make([]byte, 256*block), true); err != nil {
		t.Fatal(err)
	}
	if err := s.put("omni", "d/x", make([]byte, block), true); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(s.root, "projects", "omni")
	if err := os.Link(filepath.Join(ws, "keep"), filepath.Join(ws, "d", "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.l.Remove(ctx, "omni", "", "d", files.RemoveOptions{Recursive: true}); err != nil {
		t.Fatal(err)
	}
	fresh, err := fallback.Walk(ws)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.used("omni"); got.Bytes < fresh.Bytes || got.Inodes < fresh.Inodes {
		t.Errorf("after rm the ledger counts %+v, under a fresh walk's %+v", got, fresh)
	}
}

// Writes in one project never count against another, and no path reaches
// another project's tree.
func TestCrossTreeIsolation(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "a", "b")
	bBefore := s.used("b")
	if err := s.put("a", "f", make([]byte, 5*block), true); err != nil {
		t.Fatal(err)
	}
	if got := s.used("b"); got != bBefore {
		t.Errorf("a write in a changed b's usage: %+v -> %+v", bBefore, got)
	}
	os.WriteFile(filepath.Join(s.root, "projects/b/secret"), []byte("b's"), 0o644)
	os.Symlink(filepath.Join(s.root, "projects/b"), filepath.Join(s.root, "projects/a/to-b"))
	os.Symlink("../b", filepath.Join(s.root, "projects/a/rel-to-b"))
	for _, p := range []string{"../b/secret", "to-b/secret", "rel-to-b/secret"} {
		if _, err := s.l.Get(ctx, "a", "", p, io.Discard); err == nil {
			t.Errorf("read of %s from project a succeeded", p)
		}
		if err := s.put("a", p, []byte("overwrite"), true); err == nil {
			t.Errorf("write of %s from project a succeeded", p)
		}
	}
	if got := string(s.content("b", "secret")); got != "b's" {
		t.Errorf("b's file became %q", got)
	}
	// projects/a itself swapped for a symlink to b: the layer must not follow it.
	os.Rename(filepath.Join(s.root, "projects/a"), filepath.Join(s.root, "a-moved"))
	os.Symlink(filepath.Join(s.root, "projects/b"), filepath.Join(s.root, "projects/a"))
	if _, err := s.l.Get(ctx, "a", "", "secret", io.Discard); err == nil {
		t.Error("a tree replaced by a symlink to another tree was followed")
	}
}

func TestEscapesAreRefused(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "omni")
	outside := t.TempDir()
	canary := filepath.Join(outside, "canary")
	os.WriteFile(canary, []byte("canary"), 0o644)
	tree := filepath.Join(s.root, "projects/omni")
	os.Symlink(outside, filepath.Join(tree, "out-dir"))
	os.Symlink(canary, filepath.Join(tree, "out-file"))
	os.Symlink("loop", filepath.Join(tree, "loop"))
	os.Link(canary, filepath.Join(tree, "hardlink"))
	unix.Mkfifo(filepath.Join(tree, "fifo"), 0o644)
	unix.Mknod(filepath.Join(tree, "null"), unix.S_IFCHR|0o644, int(unix.Mkdev(1, 3)))
	os.WriteFile(filepath.Join(tree, "ok"), []byte("fine"), 0o644)

	cases := []struct{ path, why string }{
		{"../../etc/passwd", ".."},
		{"a/../../x", ".."},
		{"/etc/passwd", "absolute"},
		{"out-dir/canary", "out of the project tree"},
		{"out-file", "out of the project tree"},
		{"loop/x", "loops"},
		{"hardlink", "hard links"},
		{"fifo", "FIFO"},
		{"null", "device"},
		{"nul\x00byte", "NUL"},
		{strings.Repeat("n", 256), "longer than 255"},
		{strings.Repeat("d/", 2100), "longer than 4096"},
		{".xfsq-tmp-0123", "temporary"},
	}
	for _, c := range cases {
		done := make(chan error, 1)
		go func() { _, err := s.l.Get(ctx, "omni", "", c.path, io.Discard); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.why) {
				t.Errorf("get %.40q: %v, want a refusal mentioning %q", c.path, err, c.why)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("get %q hung", c.path)
		}
		if c.path == "hardlink" {
			continue // a write replaces the name; the linked inode outside is untouched
		}
		if err := s.put("omni", c.path, []byte("pwned"), true); err == nil {
			t.Errorf("put %.40q succeeded", c.path)
		}
	}
	if got, _ := os.ReadFile(canary); string(got) != "canary" {
		t.Errorf("the canary outside the tree became %q", got)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("files appeared outside the tree: %v", entries)
	}
	var buf bytes.Buffer
	if _, err := s.l.Get(ctx, "omni", "", "ok", &buf); err != nil || buf.String() != "fine" {
		t.Errorf("a plain file: %q, %v", buf.String(), err)
	}
}

// A symlink swapped in between any check and the open never leads out: a
// goroutine flips a name between a real directory and a link to outside
// while reads and writes go through it.
func TestSymlinkSwapRace(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "omni")
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "f"), []byte("outside"), 0o644)
	tree := filepath.Join(s.root, "projects/omni")
	real := filepath.Join(tree, "real")
	os.Mkdir(real, 0o755)
	os.WriteFile(filepath.Join(real, "f"), []byte("inside"), 0o644)
	link := filepath.Join(tree, "flip")
	stop := make(chan struct{})
	flipped := make(chan struct{})
	go func() {
		defer close(flipped)
		os.Symlink(outside, filepath.Join(tree, "evil"))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			target := "real"
			if i%2 == 1 {
				target = "evil"
			}
			os.Remove(link + ".new")
			os.Symlink(target, link+".new")
			os.Rename(link+".new", link)
		}
	}()
	for i := 0; i < 2000; i++ {
		var buf bytes.Buffer
		if _, err := s.l.Get(ctx, "omni", "", "flip/f", &buf); err == nil && buf.String() != "inside" {
			t.Fatalf("read through the swapped link returned %q", buf.String())
		}
		s.put("omni", "flip/w", []byte("x"), true)
	}
	close(stop)
	<-flipped
	if got, _ := os.ReadFile(filepath.Join(outside, "f")); string(got) != "outside" {
		t.Errorf("outside file became %q", got)
	}
	if _, err := os.Stat(filepath.Join(outside, "w")); err == nil {
		t.Error("a write through the swapped link landed outside the tree")
	}
}

func TestClean(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "."}, {".", "."}, {"a", "a"}, {"a/b/", "a/b"}, {"./a//b", "a/b"}, {"a/./b", "a/b"},
		{"..", ""}, {"a/..", ""}, {"/a", ""}, {"a\x00", ""},
	}
	for _, c := range cases {
		got, err := files.Clean(c.in)
		if (c.want == "") != (err != nil) || (err == nil && got != c.want) {
			t.Errorf("Clean(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// A write may not create a name holding a control character; Clean (reads,
// removals) still takes one, so such a file made by a tenant can go.
func TestCleanNewRefusesControlCharacters(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "omni")
	cases := []struct {
		in string
		ok bool
	}{
		{"a/b.txt", true}, {"ünï code.txt", true}, {"a b", true},
		{"evil\nname", false}, {"dir\r/x", false}, {"\x1b[2Kx", false}, {"tab\tname", false},
		{"del\x7f", false}, {"c1\u0085x", false}, {"a/\x01/b", false},
		// Not UTF-8 (a raw C1 CSI, a lone 0xff), a bidi override, a zero-width space, a line separator.
		{"c\x9b2J", false}, {"bad\xff", false}, {"inv\u202etxt.exe", false}, {"zero\u200bwidth", false}, {"ls\u2028x", false},
	}
	for _, c := range cases {
		_, err := files.CleanNew(c.in)
		var pe *files.PathError
		if !c.ok {
			if perr := s.put("omni", c.in, []byte("x"), true); perr == nil || !strings.Contains(perr.Error(), "new names take printable UTF-8 characters only") {
				t.Errorf("put %q: %v; want it refused for what it holds", c.in, perr)
			}
		}
		if (err == nil) != c.ok || (err != nil && !errors.As(err, &pe)) {
			t.Errorf("CleanNew(%q) = %v; want ok=%v (a PathError when refused)", c.in, err, c.ok)
		}
		if _, err := files.Clean(c.in); err != nil {
			t.Errorf("Clean(%q) = %v: an existing name must stay reachable", c.in, err)
		}
	}
}

// Whatever path is given, what Clean accepts stays inside the tree when
// joined to it.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"a/b", "../x", "/abs", "a/../../b", "a\x00b", "./.", "x/.xfsq-tmp-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := files.Clean(p)
		if err != nil {
			var pe *files.PathError
			if !errors.As(err, &pe) {
				t.Fatalf("Clean(%q) error is not a PathError: %v", p, err)
			}
			return
		}
		joined := filepath.Join("/tree", got)
		if joined != "/tree" && !strings.HasPrefix(joined, "/tree/") {
			t.Fatalf("Clean(%q) = %q escapes: %s", p, got, joined)
		}
		if strings.ContainsRune(got, 0) || len(got) > files.MaxPathBytes {
			t.Fatalf("Clean(%q) = %q", p, got)
		}
	})
}

func sum(data []byte) [32]byte { return sha256.Sum256(data) }

// walkBaseline records a fresh walk of a workspace as the ledger's
// baseline, as the hourly pass does, and returns it.
func (s *testRoot) walkBaseline(name string) quota.Usage {
	s.t.Helper()
	// What was just made must read as made before the walk began, though
	// the kernel's ctime clock lags (project.CtimeLag).
	time.Sleep(2 * sandbox.CtimeLag)
	u, err := fallback.Walk(filepath.Join(s.root, "projects", name))
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.st.SetBaseline(ctx, store.TreeKey{Project: name, Area: area.Workspace}, u, store.WalkAt(time.Now()), store.WalkSeen{}); err != nil {
		s.t.Fatal(err)
	}
	return u
}

// notBelowWalk fails unless admission's usage of the workspace is at least
// what a fresh walk finds: the ledger may over-count, never under-count.
func (s *testRoot) notBelowWalk(name, when string) {
	s.t.Helper()
	walk, err := fallback.Walk(filepath.Join(s.root, "projects", name))
	if err != nil {
		s.t.Fatal(err)
	}
	if used := s.used(name); used.Bytes < walk.Bytes || used.Inodes < walk.Inodes {
		s.t.Errorf("%s: the ledger counts %+v, below a fresh walk's %+v", when, used, walk)
	}
}

// Removals credit the ledger only with what they really unlinked: six
// concurrent removals of one file credit it once; removing a directory of
// hard links to a file that stays credits nothing for that file; after
// each, the ledger is not below a fresh walk.
func TestRemoveCreditsWhatWentOnly(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, s *testRoot) // files made outside xfsq are in the baseline
		rm    []string                        // removed concurrently
		once  bool                            // exactly one removal succeeds
	}{
		{"six removals of one file", func(t *testing.T, s *testRoot) {
			s.put("omni", "f", make([]byte, 64*block), true)
		}, []string{"f", "f", "f", "f", "f", "f"}, true},
		{"a directory of hard links to a file that stays", func(t *testing.T, s *testRoot) {
			s.put("omni", "keep", make([]byte, 64*block), true)
			os.Mkdir(filepath.Join(s.root, "projects/omni/links"), 0o755)
			for _, n := range []string{"a", "b", "c"} {
				if err := os.Link(filepath.Join(s.root, "projects/omni/keep"), filepath.Join(s.root, "projects/omni/links", n)); err != nil {
					t.Fatal(err)
				}
			}
		}, []string{"links"}, true},
		{"hard links inside the removed directory", func(t *testing.T, s *testRoot) {
			s.put("omni", "d/own", make([]byte, 64*block), true)
			os.Link(filepath.Join(s.root, "projects/omni/d/own"), filepath.Join(s.root, "projects/omni/d/again"))
		}, []string{"d", "d"}, false}, // both may remove part of it
	}
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				s := newSandbox(t, dsn, "omni")
				c.setup(t, s)
				before := s.walkBaseline("omni")
				s.notBelowWalk("omni", "before")
				errs := make(chan error, len(c.rm))
				var freed atomic.Uint64
				for _, p := range c.rm {
					go func() {
						res, err := s.l.Remove(ctx, "omni", "", p, files.RemoveOptions{Recursive: true})
						freed.Add(res.Bytes)
						errs <- err
					}()
				}
				ok := 0
				for range c.rm {
					if err := <-errs; err == nil {
						ok++
					} else if !errors.Is(err, os.ErrNotExist) {
						t.Errorf("remove: %v", err)
					}
				}
				if ok == 0 || (c.once && ok != 1) {
					t.Errorf("%d removals succeeded, want one (the others find it gone)", ok)
				}
				s.notBelowWalk("omni", "after")
				after, _ := fallback.Walk(filepath.Join(s.root, "projects/omni"))
				if got, want := freed.Load(), before.Bytes-after.Bytes; got != want {
					t.Errorf("reported %d bytes freed, a walk shows %d", got, want)
				}
			})
		}
	})
}

// Replacing a file that has another hard link frees none of its bytes:
// the link keeps them. A put that credited them let four 900 KB files into
// a 1 MiB tree (346 % on a fresh walk); the ledger must stay at or above a
// fresh walk, and the second 900 KB put be refused.
func TestReplaceHardLinkedFileKeepsItsBytes(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := newSandbox(t, dsn, "c")
		const limit = 1 << 20
		s.limit("c", limit, 0)
		ws := filepath.Join(s.root, "projects", "c")
		big := make([]byte, 900<<10)
		admitted := 0
		for i := 1; i <= 4; i++ {
			name := fmt.Sprintf("big%d", i)
			err := s.put("c", name, big, true)
			switch {
			case err == nil:
				admitted++
			case refusedBy(err, "bytes_hard"):
				continue
			default:
				t.Fatalf("put %s: %v", name, err)
			}
			s.notBelowWalk("c", "after putting "+name)
			if err := os.Link(filepath.Join(ws, name), filepath.Join(ws, fmt.Sprintf(".keep%d", i))); err != nil {
				t.Fatal(err)
			}
			if err := s.put("c", name, []byte("hi\n"), true); err != nil {
				t.Fatalf("replace %s: %v", name, err)
			}
			s.notBelowWalk("c", "after replacing "+name)
		}
		if admitted != 1 {
			t.Errorf("%d of the 900 KB puts were admitted into a 1 MiB tree, want 1", admitted)
		}
		if fresh, err := fallback.Walk(ws); err != nil {
			t.Fatal(err)
		} else if fresh.Bytes > limit {
			t.Errorf("a fresh walk finds %d bytes, over the hard limit of %d", fresh.Bytes, limit)
		}
	})
}

// A removal credits only what the walk behind the ledger counted: a file
// the tenant grew outside xfsq after the walk began is credited nothing
// (it may hold bytes the walk never saw). Crediting its whole size took
// the ledger below a fresh walk and let a 700 KB put take the tree to
// 126 % of its hard limit.
func TestRemoveCreditsOnlyWhatTheWalkSaw(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := newSandbox(t, dsn, "a")
		const limit = 1 << 20
		ws := filepath.Join(s.root, "projects", "a")
		if err := os.WriteFile(filepath.Join(ws, "keep"), make([]byte, 600<<10), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "p1"), make([]byte, 300<<10), 0o644); err != nil {
			t.Fatal(err)
		}
		s.walkBaseline("a")
		s.limit("a", limit, 0)
		time.Sleep(2 * sandbox.CtimeLag)
		f, err := os.OpenFile(filepath.Join(ws, "p1"), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(make([]byte, 900<<10)); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if _, err := s.l.Remove(ctx, "a", "", "p1", files.RemoveOptions{Recursive: true}); err != nil {
			t.Fatal(err)
		}
		s.notBelowWalk("a", "after rm of a file grown since the walk")
		if err := s.put("a", "new", make([]byte, 700<<10), true); !refusedBy(err, "bytes_hard") {
			t.Errorf("a 700 KB put after the rm: %v, want refused by bytes_hard", err)
		}
		if fresh, err := fallback.Walk(ws); err != nil {
			t.Fatal(err)
		} else if fresh.Bytes > limit {
			t.Errorf("a fresh walk finds %d bytes, over the hard limit of %d", fresh.Bytes, limit)
		}
	})
}

// A directory a tenant moves into its workspace after the walk (here from
// its own scratch, which is another tree; from inbound/ it is the same)
// holds files whose ctime predates the walk that never counted them here:
// removing it must not credit them, or the workspace's ledger reads less
// than the tree holds and admission takes writes past the hard limit.
func TestRemoveCreditsNothingMovedInSinceTheWalk(t *testing.T) {
	// The moved directory itself, or a file in it: the file's own ctime
	// is old, its parent's is not.
	for _, c := range []struct {
		rm        string
		recursive bool
	}{{"d", true}, {"d/big", false}} {
		t.Run(c.rm, func(t *testing.T) {
			storetest.ForEach(t, func(t *testing.T, dsn string) {
				s := newSandbox(t, dsn, "a")
				ws := filepath.Join(s.root, "projects", "a")
				moved := filepath.Join(s.root, "scratch", "a", "d")
				if err := os.MkdirAll(moved, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(moved, "big"), make([]byte, 800<<10), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(ws, "keep"), make([]byte, 600<<10), 0o644); err != nil {
					t.Fatal(err)
				}
				s.walkBaseline("a")
				s.limit("a", 1<<20, 0)
				time.Sleep(2 * sandbox.CtimeLag)
				if err := os.Rename(moved, filepath.Join(ws, "d")); err != nil {
					t.Fatal(err)
				}
				before := s.used("a")
				res, err := s.l.Remove(ctx, "a", "", c.rm, files.RemoveOptions{Recursive: c.recursive})
				if err != nil {
					t.Fatal(err)
				}
				if res.Bytes < 800<<10 {
					t.Errorf("removal %+v: freed_bytes under the 800 KiB that went", res)
				}
				// Nothing the walk never counted here is credited. (A
				// directory moved in and left is missing from the ledger
				// until the next walk, as any change made outside xfsq is.)
				if after := s.used("a"); after.Bytes < before.Bytes || after.Inodes < before.Inodes {
					t.Errorf("rm of what was moved in since the walk credited the ledger: %+v before, %+v after", before, after)
				}
				if c.recursive {
					s.notBelowWalk("a", "after rm of what was moved in since the walk")
				}
				if err := s.put("a", "new", make([]byte, 700<<10), true); !refusedBy(err, "bytes_hard") {
					t.Errorf("a 700 KB put after the rm: %v, want refused by bytes_hard (600 KiB of 1 MiB are held)", err)
				}
			})
		})
	}
}

// What a removal answers is what it freed, whatever the ledger is credited:
// a file written through xfsq since the walk is in the ledger already and
// credits nothing, but it went, and freed_bytes and removed_files say so.
func TestRemoveReportsAllItFreed(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := newSandbox(t, dsn, "a")
		s.walkBaseline("a")
		if err := s.put("a", "new", make([]byte, 300<<10), true); err != nil {
			t.Fatal(err)
		}
		want := uint64(0)
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(s.root, "projects", "a", "new"), &st); err != nil {
			t.Fatal(err)
		}
		want = uint64(st.Blocks) * 512
		res, err := s.l.Remove(ctx, "a", "", "new", files.RemoveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Bytes != want || res.Files != 1 {
			t.Errorf("removal %+v, want freed_bytes %d and removed_files 1", res, want)
		}
		s.notBelowWalk("a", "after rm of a file written through xfsq since the walk")
	})
}

// A file written through xfsq since the walk is in the ledger by its own
// row: removing it (alone, in a directory, or grown since by the tenant)
// credits what that row counted, once, and never more than its blocks, so
// that a tenant who deletes what it uploaded can upload again at once
// rather than after the next walk; the ledger stays at or above a fresh
// walk throughout.
func TestRemoveCreditsWhatItsOwnWriteCounted(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := newSandbox(t, dsn, "a")
		const limit = 1 << 20
		// A write that also makes a directory has one row for both, which
		// counts no single file (it stays counted until the walk): d is
		// there before.
		if err := os.Mkdir(filepath.Join(s.root, "projects", "a", "d"), 0o755); err != nil {
			t.Fatal(err)
		}
		s.walkBaseline("a")
		s.limit("a", limit, 0)
		base := s.used("a")
		for _, c := range []struct {
			name    string
			put     []string // written through xfsq, 600 KiB each between them
			grow    string   // then grown by the tenant's shell
			rm      string
			recurse bool
		}{
			{"a file", []string{"f"}, "", "f", false},
			{"a directory of files", []string{"d/1", "d/2", "d/3"}, "", "d", true},
			{"a file the tenant grew", []string{"g"}, "g", "g", false},
		} {
			for _, p := range c.put {
				if err := s.put("a", p, make([]byte, 600<<10/len(c.put)), true); err != nil {
					t.Fatalf("%s: put %s: %v", c.name, p, err)
				}
			}
			if c.grow != "" {
				f, err := os.OpenFile(filepath.Join(s.root, "projects", "a", c.grow), os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.Write(make([]byte, 200<<10))
				f.Close()
			}
			if _, err := s.l.Remove(ctx, "a", "", c.rm, files.RemoveOptions{Recursive: c.recurse}); err != nil {
				t.Fatalf("%s: rm: %v", c.name, err)
			}
			s.notBelowWalk("a", c.name)
			// What the writes took is back: within a block a directory.
			if used := s.used("a"); used.Bytes > base.Bytes+2*block || used.Inodes > base.Inodes+1 {
				t.Errorf("%s: usage %+v after the rm, want back to the %+v before the writes", c.name, used, base)
			}
		}
	})
}

// A tenant renaming, removing and symlinking the directory above a file
// while xfsq removes the file collides with the removal, it does not make
// it fail: each removal ends done, not found, refused or left (a conflict),
// never an internal error, and no deletion is journalled as failed — that
// pages an operator (XfsqDeletionsFailed), which a tenant must not be able
// to do at will. The file outside the tree the link points at stays.
func TestARemovalRacingTheTenantIsNeverAFailure(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "omni")
	tree := filepath.Join(s.root, "projects/omni")
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "f"), []byte("outside"), 0o644)
	step := 0
	stop := tenanttest.Loop(t, func() {
		switch step++; step % 4 {
		case 1:
			os.Rename(filepath.Join(tree, "d"), filepath.Join(tree, "e"))
		case 2:
			os.Symlink(outside, filepath.Join(tree, "d"))
		case 3:
			os.Remove(filepath.Join(tree, "d"))
		case 0:
			os.Rename(filepath.Join(tree, "e"), filepath.Join(tree, "d"))
		}
	})
	kinds := map[errkind.Kind]int{}
	for range 400 {
		// Made as the tenant cannot mislead it: never through the link.
		os.Mkdir(filepath.Join(tree, "d"), 0o755)
		if dfd, err := unix.Open(filepath.Join(tree, "d"), unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
			if fd, err := unix.Openat(dfd, "f", unix.O_CREAT|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644); err == nil {
				unix.Close(fd)
			}
			unix.Close(dfd)
		}
		_, err := s.l.Remove(ctx, "omni", "", "d/f")
		if err != nil {
			kinds[errkind.Of(err)]++
			if errkind.Of(err) == errkind.Internal {
				t.Errorf("a removal the tenant raced failed as an internal error: %v", err)
			}
		}
	}
	stop()
	evs, err := s.st.Events(ctx, store.EventFilter{Type: journal.TypeEvicted, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		var rec struct{ State, Error string }
		json.Unmarshal(ev.Payload, &rec)
		if rec.State == deletion.StateFailed {
			t.Errorf("a deletion the tenant raced is journalled as failed: %s", ev.Payload)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(outside, "f")); string(got) != "outside" {
		t.Errorf("the file outside the tree became %q", got)
	}
	t.Logf("outcomes other than done: %v", kinds)
}

// A path ending in "/" names a directory, as the shell's tools take it: a
// write to one is refused (it would otherwise make a file of that name),
// and a removal of "f/" refuses a file and still takes a directory.
func TestATrailingSlashNamesADirectory(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "omni")
	if err := s.put("omni", "new/", []byte("x"), true); errkind.Of(err) != errkind.Input || !strings.Contains(fmt.Sprint(err), "ends in /") {
		t.Errorf("put new/: %v; want it refused as bad input", err)
	}
	if _, err := os.Lstat(filepath.Join(s.root, "projects/omni/new")); err == nil {
		t.Error("put new/ made a file called new")
	}
	s.put("omni", "d/f", []byte("x"), true)
	if _, err := s.l.Remove(ctx, "omni", "", "d/f/"); errkind.Of(err) != errkind.Input || !strings.Contains(fmt.Sprint(err), "not a directory") {
		t.Errorf("rm d/f/ of a file: %v; want it refused as not a directory", err)
	}
	if s.content("omni", "d/f") == nil {
		t.Fatal("rm d/f/ removed the file")
	}
	if _, err := s.l.Remove(ctx, "omni", "", "d/", files.RemoveOptions{Recursive: true}); err != nil {
		t.Errorf("rm -r d/ of a directory: %v", err)
	}
	s.put("omni", "uploads/f", []byte("x"), true)
	if _, err := s.l.Remove(ctx, "omni", "", "uploads/", files.RemoveOptions{Recursive: true}); err != nil || s.content("omni", "uploads/f") != nil {
		t.Errorf("rm -r uploads/ (emptied, kept): %v", err)
	}
}

// A removal without Recursive never removes a directory, also not one a
// tenant swaps in for the file that was checked: it is left, with all it
// holds, and the removal says so.
func TestARemovalOfAFileNeverTakesADirectorySwappedIn(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "omni")
	tree := filepath.Join(s.root, "projects/omni")
	s.put("omni", "f", []byte("x"), true)
	*files.RaceHook = func(point string) {
		if point == "rm:checked" {
			os.Remove(filepath.Join(tree, "f"))
			os.MkdirAll(filepath.Join(tree, "f/work"), 0o755)
			os.WriteFile(filepath.Join(tree, "f/work/thesis"), []byte("years"), 0o644)
		}
	}
	defer func() { *files.RaceHook = nil }()
	res, err := s.l.Remove(ctx, "omni", "", "f")
	var left *files.LeftError
	if !errors.As(err, &left) || res.Entries != 0 {
		t.Errorf("rm f, a directory swapped in: %+v %v; want it left in place", res, err)
	}
	if s.content("omni", "f/work/thesis") == nil {
		t.Fatal("rm of a file without --recursive removed a directory a tenant swapped in")
	}
}

// A path through a link of many ".." while renames run beside it makes the
// kernel give up resolving it (openat2's EAGAIN, after xfsq's retries): a
// read, listing or write of it is then a collision to retry, never an
// internal error a tenant could provoke at will.
func TestResolvingAmidRenamesIsNeverAnInternalError(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "omni")
	tree := filepath.Join(s.root, "projects/omni")
	s.put("omni", "d/e/f", []byte("hi"), true)
	os.Symlink(strings.Repeat("d/e/../../", 200)+"d/e", filepath.Join(tree, "L"))
	os.Mkdir(filepath.Join(tree, "r1"), 0o755)
	stop := tenanttest.Loop(t, func() {
		os.Rename(filepath.Join(tree, "r1"), filepath.Join(tree, "r2"))
		os.Rename(filepath.Join(tree, "r2"), filepath.Join(tree, "r1"))
	})
	kinds := map[errkind.Kind]int{}
	for i := range 150 {
		var err error
		switch i % 3 {
		case 0:
			_, err = s.l.Get(ctx, "omni", "", "L/f", io.Discard)
		case 1:
			_, err = s.l.List(ctx, "omni", "", "L")
		case 2:
			_, err = s.l.Put(ctx, "omni", "", fmt.Sprintf("L/n%d", i), strings.NewReader("x"), 1)
		}
		if err != nil {
			kinds[errkind.Of(err)]++
			if errkind.Of(err) == errkind.Internal {
				t.Errorf("a path resolved amid renames: %v (internal)", err)
			}
		}
	}
	stop()
	t.Logf("outcomes other than success: %v", kinds)
}
