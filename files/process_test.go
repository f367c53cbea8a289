package files_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota/fallback"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// Helper-process modes: the test binary runs itself as a writer.
const (
	envHelper = "XFSQ_TEST_FILES_HELPER" // "writers" or "slow"
	envRoot   = "XFSQ_TEST_FILES_ROOT"
	envDSN    = "XFSQ_TEST_FILES_DSN"
	envHost   = "XFSQ_TEST_FILES_HOST"
	envProc   = "XFSQ_TEST_FILES_PROC"
	// envNamed makes the helper use a named temporary file, as on a
	// filesystem without O_TMPFILE, so that there is one to reclaim.
	envNamed = "XFSQ_TEST_FILES_NAMED_TEMP"
)

func TestMain(m *testing.M) {
	switch os.Getenv(envHelper) {
	case "":
		os.Exit(m.Run())
	case "writers":
		os.Exit(writersHelper())
	case "slow":
		os.Exit(slowHelper())
	case "place-lock":
		// Holds the placing lock of the tree named in envProc until its
		// stdin closes, saying "held" once it has it.
		unlock := files.LockPlacing(os.Getenv(envRoot), os.Getenv(envProc))
		fmt.Println("held")
		io.Copy(io.Discard, os.Stdin)
		unlock()
		os.Exit(0)
	}
}

// The placing lock holds across processes (the CLI beside serve), per
// tree: while another process holds a tree's, this one waits for that
// tree's and not for another's.
func TestThePlacingLockHoldsAcrossProcesses(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, ".xfsq"), 0o700)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envHelper+"=place-lock", envRoot+"="+root, envProc+"=projects/omni")
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	line := make([]byte, 5)
	if _, err := io.ReadFull(out, line); err != nil || string(line) != "held\n" {
		t.Fatalf("the helper: %q %v", line, err)
	}
	files.LockPlacing(root, "projects/other")() // another tree's: at once
	got := make(chan struct{})
	go func() { files.LockPlacing(root, "projects/omni")(); close(got) }()
	select {
	case <-got:
		t.Fatal("took the tree's placing lock while another process held it")
	case <-time.After(300 * time.Millisecond):
	}
	stdin.Close()
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the tree's placing lock was not given once the other process let it go")
	}
}

func helperLayer() (*files.Layer, error) {
	*files.NoTmpfile = os.Getenv(envNamed) != ""
	st, err := store.Open(context.Background(), os.Getenv(envDSN), os.Getenv(envHost))
	if err != nil {
		return nil, err
	}
	m, err := sandbox.Open(context.Background(), sandbox.Options{Root: os.Getenv(envRoot), Store: st, Actor: "helper"})
	if err != nil {
		return nil, err
	}
	return m.Files().ForWrites(context.Background())
}

// outcome is what one writer goroutine left at each of its paths: the hex
// SHA-256 of the last content it wrote successfully, or "" for none.
type outcome struct {
	Expect   map[string]string `json:"expect"`
	Admitted int               `json:"admitted"`
	Refused  int               `json:"refused"`
}

func writersHelper() int {
	l, err := helperLayer()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	proc := os.Getenv(envProc)
	var mu sync.Mutex
	total := outcome{Expect: map[string]string{}}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(g)))
			mine := outcome{Expect: map[string]string{}}
			for range 12 {
				p := fmt.Sprintf("w%s-%d-%d", proc, g, rng.IntN(3))
				data := make([]byte, rng.IntN(48<<10))
				for i := range data {
					data[i] = byte(rng.Uint32())
				}
				size := int64(len(data))
				if rng.IntN(2) == 0 {
					size = -1
				}
				_, err := l.Put(context.Background(), "omni", "", p, bytes.NewReader(data), size)
				switch {
				case err == nil:
					mine.Admitted++
					h := sum(data)
					mine.Expect[p] = hex.EncodeToString(h[:])
				case refusedBy(err, "bytes_hard") || refusedBy(err, "inodes_hard"):
					mine.Refused++
					if _, ok := mine.Expect[p]; !ok {
						mine.Expect[p] = ""
					}
				default:
					fmt.Fprintln(os.Stderr, "unexpected:", err)
				}
			}
			mu.Lock()
			for k, v := range mine.Expect {
				total.Expect[k] = v
			}
			total.Admitted += mine.Admitted
			total.Refused += mine.Refused
			mu.Unlock()
		})
	}
	wg.Wait()
	json.NewEncoder(os.Stdout).Encode(total)
	return 0
}

func helperCmd(t *testing.T, s *testRoot, mode, proc string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envHelper+"="+mode, envRoot+"="+s.root, envDSN+"="+s.dsn,
		envHost+"="+s.st.Host, envProc+"="+proc)
	cmd.Stderr = os.Stderr
	return cmd
}

// 4 processes × 16 goroutines write random sizes into one small tree: the
// committed bytes never pass the limit, every refused write left its path
// as it was, and no reservation is left behind.
func TestConcurrentWritersAcrossProcesses(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := newSandbox(t, dsn, "omni")
		u := s.used("omni")
		limit := u.Bytes + 512<<10
		s.limit("omni", limit, 0)
		outs := make([]outcome, 4)
		var wg sync.WaitGroup
		for i := range outs {
			wg.Go(func() {
				out, err := helperCmd(t, s, "writers", fmt.Sprint(i)).Output()
				if err != nil {
					t.Errorf("writer process %d: %v", i, err)
					return
				}
				json.Unmarshal(out, &outs[i])
			})
		}
		wg.Wait()
		admitted, refused := 0, 0
		for _, o := range outs {
			admitted += o.Admitted
			refused += o.Refused
			for p, want := range o.Expect {
				data, err := os.ReadFile(filepath.Join(s.root, "projects/omni", p))
				got := ""
				if err == nil {
					h := sum(data)
					got = hex.EncodeToString(h[:])
				}
				if got != want {
					t.Errorf("%s holds %.12s, want %.12s (the last admitted write, or nothing)", p, got, want)
				}
			}
		}
		if admitted == 0 || refused == 0 {
			t.Errorf("%d admitted, %d refused: the limit did not bite, the test shows nothing", admitted, refused)
		}
		disk, err := fallback.Walk(filepath.Join(s.root, "projects/omni"))
		if err != nil {
			t.Fatal(err)
		}
		if disk.Bytes > limit {
			t.Errorf("%d bytes on disk, %d over the %d-byte limit", disk.Bytes, disk.Bytes-limit, limit)
		}
		if acct := s.used("omni"); acct.Bytes > limit || acct.Bytes < disk.Bytes {
			t.Errorf("xfsq counts %d bytes, disk holds %d, limit %d: the count must cover the disk and stay within the limit", acct.Bytes, disk.Bytes, limit)
		}
		if res, _ := s.st.Reservations(ctx); len(res) != 0 {
			t.Errorf("%d reservations leaked", len(res))
		}
		entries, _ := os.ReadDir(filepath.Join(s.root, "projects/omni"))
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), files.TempPrefix) {
				t.Errorf("temporary file left: %s", e.Name())
			}
		}
	})
}

// slowHelper streams stdin into a file until it is killed.
func slowHelper() int {
	l, err := helperLayer()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_, err = l.Put(context.Background(), "omni", "", "big", bufio.NewReader(os.Stdin), -1)
	fmt.Fprintln(os.Stderr, "slow writer finished:", err)
	return 0
}

// startSlow starts a helper that streams its stdin into "big", feeds it n
// bytes, and waits until its reservation covers them.
func startSlow(t *testing.T, s *testRoot, n int) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := helperCmd(t, s, "slow", "0")
	cmd.Env = append(cmd.Env, envNamed+"=1")
	stdin, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	stdin.Write(make([]byte, n))
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, _ := s.st.Reservations(ctx)
		if len(res) == 1 && res[0].Bytes >= uint64(n) {
			return cmd, stdin
		}
		if time.Now().After(deadline) {
			t.Fatalf("the writer never reserved for its first %d bytes: %+v", n, res)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func doctorKinds(t *testing.T, s *testRoot) map[string]int {
	t.Helper()
	findings, err := s.m.Doctor(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, f := range findings {
		kinds[f.Kind]++
	}
	return kinds
}

// A writer killed with SIGKILL mid-write leaves no partial file at the
// target; doctor reports its reservation as dead, and the next write
// reclaims it (and its temporary file) at once, not after reservation_ttl:
// room held by a process that is gone is room nobody holds.
func TestDeadWriterIsReclaimedAtOnce(t *testing.T) {
	storetest.ForEach(t, testDeadWriterIsReclaimedAtOnce)
}

func testDeadWriterIsReclaimedAtOnce(t *testing.T, dsn string) {
	s := newSandbox(t, dsn, "omni")
	s.limit("omni", s.used("omni").Bytes+10<<20, 0)
	os.WriteFile(filepath.Join(s.root, "projects/omni/big"), []byte("old content"), 0o644)
	cmd, _ := startSlow(t, s, 6<<20)
	if k := doctorKinds(t, s); k[sandbox.WriteInProgress] != 1 || k[sandbox.DeadReservation] != 0 {
		t.Errorf("doctor during the write: %v, want one %s", k, sandbox.WriteInProgress)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if got := string(s.content("omni", "big")); got != "old content" {
		t.Fatalf("after the kill the target holds %d bytes, want the old content", len(got))
	}
	res, _ := s.st.Reservations(ctx)
	if len(res) != 1 {
		t.Fatalf("reservations after the kill: %+v", res)
	}
	temp := filepath.Join(s.root, res[0].TempPath)
	if _, err := os.Stat(temp); err != nil {
		t.Fatalf("the killed writer's temporary file %s: %v", temp, err)
	}
	if k := doctorKinds(t, s); k[sandbox.DeadReservation] != 1 || k[sandbox.WriteInProgress] != 0 {
		t.Errorf("doctor after the kill: %v, want one %s", k, sandbox.DeadReservation)
	}
	// 6 MiB of the 10 are held by the dead writer: this write fits only
	// if its reservation is reclaimed now (reservation_ttl is 10m).
	if err := s.put("omni", "next", make([]byte, 8<<20), true); err != nil {
		t.Fatalf("a write needing the dead writer's room: %v", err)
	}
	if res, _ := s.st.Reservations(ctx); len(res) != 0 {
		t.Errorf("reservations after the next write: %+v", res)
	}
	if _, err := os.Stat(temp); !os.IsNotExist(err) {
		t.Errorf("the reclaimed reservation's temporary file is still there: %v", err)
	}
	// Its removal is a deletion like any other: journalled pending first.
	if got := evictionStates(t, s, res[0].TempPath); got != "done,pending" {
		t.Errorf("the temporary file's removal journalled %q, want pending then done", got)
	}
}

// evictionStates lists the states of the storage.evicted records of p,
// newest first.
func evictionStates(t *testing.T, s *testRoot, p string) string {
	t.Helper()
	evs, err := s.st.Events(ctx, store.EventFilter{Type: journal.TypeEvicted, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, ev := range evs {
		var rec struct{ Path, State string }
		json.Unmarshal(ev.Payload, &rec)
		if rec.Path == p {
			states = append(states, rec.State)
		}
	}
	return strings.Join(states, ",")
}

// A write's temporary file that no reservation names and that nothing
// touched for reservation_ttl (its process died between linking the body
// there and placing it) is found by doctor and removed, journalled, by
// --fix. One a reservation names is the reservation's finding; a fresh one
// may be a write placing its body; a directory at such a name is a
// tenant's and stays.
func TestDoctorRemovesAStrayTemporaryFile(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "omni")
	if _, _, err := s.m.SetSetting(ctx, "reservation_ttl", "1s"); err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(s.root, "projects/omni")
	cmd, _ := startSlow(t, s, 1<<20)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	os.WriteFile(filepath.Join(tree, sandbox.TempPrefix+"stray"), make([]byte, 100<<10), 0o644)
	os.MkdirAll(filepath.Join(tree, sandbox.TempPrefix+"dir/work"), 0o755)
	os.WriteFile(filepath.Join(tree, sandbox.TempPrefix+"dir/work/thesis"), []byte("years"), 0o644)
	if k := doctorKinds(t, s); k[sandbox.StrayTemp] != 0 {
		t.Errorf("doctor right after: %v; a temporary file changed within reservation_ttl may be a write placing it", k)
	}
	s.walkBaseline("omni") // counts the stray: its removal is credited
	withStray := s.used("omni")
	time.Sleep(1100 * time.Millisecond)
	os.WriteFile(filepath.Join(tree, sandbox.TempPrefix+"fresh"), []byte("x"), 0o644)
	findings, err := s.m.Doctor(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	var strays []string
	for _, f := range findings {
		if f.Kind == sandbox.StrayTemp {
			strays = append(strays, f.Path)
			if !f.Fixed {
				t.Errorf("stray %s not fixed: %s", f.Path, f.Error)
			}
		}
	}
	if want := "projects/omni/" + sandbox.TempPrefix + "stray"; strings.Join(strays, ",") != want {
		t.Errorf("stray temporary files found: %v, want only %s (not the dead writer's, which its reservation names, nor the fresh one, nor the directory)", strays, want)
	}
	if _, err := os.Lstat(filepath.Join(tree, sandbox.TempPrefix+"stray")); !os.IsNotExist(err) {
		t.Errorf("the stray temporary file after doctor --fix: %v", err)
	}
	// Nothing over-counted: the tree counts what a walk finds, but for the
	// fresh file, written outside xfsq since the last walk.
	real, err := fallback.Walk(tree)
	if err != nil {
		t.Fatal(err)
	}
	var fresh syscall.Stat_t
	syscall.Lstat(filepath.Join(tree, sandbox.TempPrefix+"fresh"), &fresh)
	if got := s.used("omni"); got.Bytes+uint64(fresh.Blocks)*512 != real.Bytes || got.Inodes+1 != real.Inodes {
		t.Errorf("after doctor --fix the tree counts %+v (with the stray %+v), a walk finds %+v and the fresh file: want the stray's 100 KiB and inode credited", got, withStray, real)
	}
	if got := evictionStates(t, s, "projects/omni/"+sandbox.TempPrefix+"stray"); got != "done,pending" {
		t.Errorf("the stray's removal journalled %q, want pending then done", got)
	}
	if got, _ := os.ReadFile(filepath.Join(tree, sandbox.TempPrefix+"dir/work/thesis")); string(got) != "years" {
		t.Error("doctor --fix removed what a directory at a temporary name held")
	}
	if _, err := os.Lstat(filepath.Join(tree, sandbox.TempPrefix+"fresh")); err != nil {
		t.Errorf("doctor --fix removed a temporary file changed within reservation_ttl: %v", err)
	}
}

// What a tenant puts at a dead writer's temporary name is the tenant's: a
// directory holding work, a link or a FIFO (xfsq's temporary files are
// regular files). The reclaim that removes the writer's file leaves each.
func TestAReclaimLeavesWhatATenantPutsAtTheTemporaryName(t *testing.T) {
	for _, c := range []struct {
		kind  string
		plant func(temp string) error
		check func(temp string) bool
	}{
		{"directory", func(temp string) error {
			os.MkdirAll(filepath.Join(temp, "work"), 0o755)
			return os.WriteFile(filepath.Join(temp, "work/thesis"), []byte("years"), 0o644)
		}, func(temp string) bool {
			got, _ := os.ReadFile(filepath.Join(temp, "work/thesis"))
			return string(got) == "years"
		}},
		{"symlink", func(temp string) error { return os.Symlink("work", temp) },
			func(temp string) bool { _, err := os.Lstat(temp); return err == nil }},
		{"fifo", func(temp string) error { return syscall.Mkfifo(temp, 0o644) },
			func(temp string) bool { _, err := os.Lstat(temp); return err == nil }},
	} {
		t.Run(c.kind, func(t *testing.T) {
			s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "omni")
			s.limit("omni", s.used("omni").Bytes+10<<20, 0)
			cmd, _ := startSlow(t, s, 6<<20)
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			res, _ := s.st.Reservations(ctx)
			if len(res) != 1 {
				t.Fatalf("reservations after the kill: %+v", res)
			}
			temp := filepath.Join(s.root, res[0].TempPath)
			if err := os.Remove(temp); err != nil {
				t.Fatal(err)
			}
			if err := c.plant(temp); err != nil {
				t.Fatal(err)
			}
			if err := s.put("omni", "next", make([]byte, 8<<20), true); err != nil {
				t.Fatalf("a write needing the dead writer's room: %v", err)
			}
			if !c.check(temp) {
				t.Errorf("the reclaim removed the tenant's %s at the temporary name", c.kind)
			}
		})
	}
}

// A live writer that stalls (its body stops arriving) is reclaimed after
// reservation_ttl, and doctor says so; its later data cannot be committed.
func TestStalledWriterIsReclaimedAfterTTL(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "omni")
	if _, _, err := s.m.SetSetting(ctx, "reservation_ttl", "1s"); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(s.root, "projects/omni/big"), []byte("old content"), 0o644)
	cmd, stdin := startSlow(t, s, 1<<20)
	time.Sleep(1500 * time.Millisecond)
	if k := doctorKinds(t, s); k[sandbox.DeadReservation] != 1 {
		t.Errorf("doctor after the TTL: %v, want one %s", k, sandbox.DeadReservation)
	}
	if err := s.put("omni", "small", []byte("x"), true); err != nil {
		t.Fatal(err)
	}
	if res, _ := s.st.Reservations(ctx); len(res) != 0 {
		t.Errorf("reservations after the TTL: %+v", res)
	}
	stdin.Write(make([]byte, 1<<20))
	stdin.Close()
	cmd.Wait()
	if got := string(s.content("omni", "big")); got != "old content" {
		t.Errorf("a reclaimed write was committed: the target holds %d bytes", len(got))
	}
}

// A write whose reservation another write reclaimed while its body stalled
// fails as a collision to retry (409, exit 1), not as xfsq's own error, and
// leaves the target as it was.
func TestAReclaimedWriteIsAConflict(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "omni")
	if _, _, err := s.m.SetSetting(ctx, "reservation_ttl", "1s"); err != nil {
		t.Fatal(err)
	}
	l, err := s.m.Files().ForWrites(ctx)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(s.root, "projects/omni/big"), []byte("old content"), 0o644)
	g := &gate{first: make([]byte, 64<<10), rest: make([]byte, 64<<10), waiting: make(chan struct{}), open: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := l.Put(ctx, "omni", "", "big", g, -1)
		done <- err
	}()
	<-g.waiting
	time.Sleep(1500 * time.Millisecond)
	if err := s.put("omni", "small", []byte("x"), true); err != nil { // reclaims the stalled one
		t.Fatal(err)
	}
	close(g.open)
	err = <-done
	if k := errkind.Of(err); err == nil || k != errkind.Conflict {
		t.Errorf("the reclaimed write: %v (kind %s), want a conflict", err, k)
	}
	if got := string(s.content("omni", "big")); got != "old content" {
		t.Errorf("the target holds %d bytes after a reclaimed write", len(got))
	}
}
