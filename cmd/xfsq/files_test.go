package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
	"github.com/xfsq/xfsq/internal/testsupport/prereq"
	"github.com/xfsq/xfsq/sandbox"
)

// files get of a socket is bad input (exit 2) that says what the path is,
// not a failure with "no such device or address".
func TestFilesGetSocket(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(s.root, "projects/omni/agent.sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := s.run("files", "get", "omni", "agent.sock")
	if r.code != 2 || !strings.Contains(r.stderr, `"agent.sock"`) || !strings.Contains(r.stderr, "it is a socket") {
		t.Errorf("files get of a socket: exit %d %q; want 2 naming the path and saying it is a socket", r.code, r.stderr)
	}
}

// SIGINT or SIGTERM during a files put whose stdin never closes stops it at
// once: it says it was interrupted, exits 128+signal, leaves the old file,
// and releases its reservation and temporary file.
func TestFilesPutInterrupted(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(unix.SignalName(sig), func(t *testing.T) {
			s := fallbackSandbox(t, "")
			s.ok("project", "add", "omni")
			tree := filepath.Join(s.root, "projects/omni")
			os.WriteFile(filepath.Join(tree, "big"), []byte("old"), 0o644)
			cmd := exec.Command(os.Getenv(envBinary), "--root", s.root, "files", "put", "omni", "big")
			cmd.Env = append(os.Environ(), s.env...)
			stdin, _ := cmd.StdinPipe()
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			stdin.Write(make([]byte, 100<<10))
			st := s.store()
			for deadline := time.Now().Add(10 * time.Second); ; {
				if res, _ := st.Reservations(context.Background()); len(res) == 1 && res[0].Bytes > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the put never reserved anything")
				}
				time.Sleep(20 * time.Millisecond)
			}
			cmd.Process.Signal(sig)
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			var err error
			select {
			case err = <-exited:
			case <-time.After(5 * time.Second):
				cmd.Process.Kill()
				<-exited
				t.Fatalf("files put ignored %s for 5s", unix.SignalName(sig))
			}
			var ee *exec.ExitError
			// Interrupted is the whole story: nothing of what the write was doing.
			if want := "xfsq: interrupted (" + unix.SignalName(sig) + ")\n"; !errors.As(err, &ee) || ee.ExitCode() != 128+int(sig) || stderr.String() != want {
				t.Errorf("after %s: %v, stderr %q; want exit %d and %q", unix.SignalName(sig), err, stderr.String(), 128+int(sig), want)
			}
			if got, _ := os.ReadFile(filepath.Join(tree, "big")); string(got) != "old" {
				t.Errorf("the target holds %d bytes, want the old content", len(got))
			}
			if res, _ := st.Reservations(context.Background()); len(res) != 0 {
				t.Errorf("reservations left: %+v", res)
			}
			entries, _ := os.ReadDir(tree)
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".xfsq-tmp-") {
					t.Errorf("temporary file left: %s", e.Name())
				}
			}
		})
	}
}

// mountTmpfs mounts a tmpfs of size bytes on a new directory: a filesystem
// that can be filled in a moment.
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		prereq.Missing(t, "a full filesystem needs root to mount a tmpfs (run the tests as root)")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		prereq.Missing(t, "mount a tmpfs: "+err.Error())
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// fill writes to path until the filesystem is full, as a tenant would.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	for { // the last blocks, a few bytes at a time
		if _, err := f.Write(buf[:512]); err != nil {
			break
		}
	}
}

// A full filesystem is said to be one — not a quota refusal with numbers
// that contradict each other — and the operator can still read with every
// read command (which say the filesystem is full) and free room with files
// rm, after which writes work again.
func TestFullFilesystem(t *testing.T) {
	s := newSandbox(t, mountTmpfs(t, 16<<20), "")
	s.ok("init")
	s.ok("project", "add", "omni", "--bytes-hard", "1g")
	src := filepath.Join(t.TempDir(), "src")
	os.WriteFile(src, make([]byte, 100<<10), 0o644)
	os.WriteFile(filepath.Join(s.root, "projects/omni/a.txt"), []byte("hello\n"), 0o644)
	fill(t, filepath.Join(s.root, "projects/omni/filler"))

	r := s.run("files", "put", "omni", "b", "--from", src)
	if r.code != 1 || !strings.Contains(r.stderr, "the filesystem holding "+s.root) || !strings.Contains(r.stderr, "is full (") ||
		strings.Contains(r.stderr, "quota") || strings.Contains(r.stderr, "bytes_hard") {
		t.Errorf("files put on a full filesystem: exit %d %q; want 1 saying the filesystem holding %s is full, no quota", r.code, r.stderr, s.root)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"project", "list"}, "omni"},
		{[]string{"project", "show", "omni"}, "omni"},
		{[]string{"report"}, "workspace"},
		{[]string{"events"}, "project.added"},
		{[]string{"settings", "list"}, "reservation_ttl"},
		{[]string{"files", "ls", "omni"}, "filler"},
		{[]string{"files", "get", "omni", "a.txt"}, "hello"},
		{[]string{"doctor"}, "no drift"},
	} {
		if r := s.run(c.args...); r.code != 0 || !strings.Contains(r.stdout, c.want) || !strings.Contains(r.stderr, "is full") {
			t.Errorf("xfsq %v on a full filesystem: exit %d\nstdout %q\nstderr %q", c.args, r.code, r.stdout, r.stderr)
		}
	}
	if r := s.run("files", "rm", "omni", "filler"); r.code != 0 {
		t.Fatalf("files rm on a full filesystem: exit %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(s.root, "projects/omni/filler")); !os.IsNotExist(err) {
		t.Errorf("files rm left the file: %v", err)
	}
	var evs []sandbox.Event
	s.json(&evs, "events", "--type", "storage.evicted")
	if len(evs) != 2 {
		t.Errorf("the deletion on a full filesystem was journalled %d times, want pending and done", len(evs))
	}
	s.ok("files", "put", "omni", "b", "--from", src)
	if _, err := os.Stat(filepath.Join(s.root, ".xfsq/reserve")); err != nil {
		t.Errorf("the reserve was not made again once there was room: %v", err)
	}
}

// doctor lists the reservations of writes in flight: a running files put's
// as write-in-progress, a killed one's as dead-reservation (exit 1 until
// --fix releases it).
func TestDoctorReservations(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	cmd := exec.Command(os.Getenv(envBinary), "--root", s.root, "files", "put", "omni", "big")
	cmd.Env = append(os.Environ(), s.env...)
	stdin, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdin.Write(make([]byte, 100<<10))
	st := s.store()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if res, _ := st.Reservations(context.Background()); len(res) == 1 && res[0].Bytes > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the put never reserved anything")
		}
		time.Sleep(20 * time.Millisecond)
	}
	kinds := func(args ...string) (map[string]int, int) {
		r := s.run(append([]string{"--json", "doctor"}, args...)...)
		var findings []struct{ Kind string }
		if err := json.Unmarshal([]byte(r.stdout), &findings); err != nil {
			t.Fatalf("doctor %v: %v\n%s%s", args, err, r.stdout, r.stderr)
		}
		k := map[string]int{}
		for _, f := range findings {
			k[f.Kind]++
		}
		return k, r.code
	}
	if k, code := kinds(); k["write-in-progress"] != 1 || code != 0 {
		t.Errorf("doctor during the write: %v exit %d; want one write-in-progress, exit 0", k, code)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if k, code := kinds(); k["dead-reservation"] != 1 || code != 1 {
		t.Errorf("doctor after the kill: %v exit %d; want one dead-reservation, exit 1", k, code)
	}
	if _, code := kinds("--fix"); code != 0 {
		t.Errorf("doctor --fix: exit %d", code)
	}
	if res, _ := st.Reservations(context.Background()); len(res) != 0 {
		t.Errorf("reservations after doctor --fix: %+v", res)
	}
}

// files get and files ls never read through a mount inside a tree: a bind
// mount of a directory outside the root shows none of its files, and the
// refusal names the path and says it is on another mount (exit 2).
func TestFilesReadsStayOnTheTreesMount(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "a")
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "f1"), []byte("OUTSIDE-CANARY"), 0o644); err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(s.root, "projects/a/mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	mounttest.Bind(t, outside, mnt)
	// A file mounted over a file of the tree: the name is the tree's, the
	// content is not.
	if err := os.WriteFile(filepath.Join(s.root, "projects/a/mntf"), []byte("tree"), 0o644); err != nil {
		t.Fatal(err)
	}
	mounttest.Bind(t, filepath.Join(outside, "f1"), filepath.Join(s.root, "projects/a/mntf"))
	const why = "it is on another mount (a mount point inside the tree)"
	for _, args := range [][]string{
		{"files", "get", "a", "mnt/f1"},
		{"files", "ls", "a", "mnt"},
		{"files", "ls", "a", "mnt/"},
		{"files", "get", "a", "mntf"},
		// A single name lists from its lstat: not through a mount either.
		{"files", "ls", "a", "mnt/f1"},
		{"files", "ls", "a", "mntf"},
	} {
		r := s.run(args...)
		if strings.Contains(r.stdout, "OUTSIDE-CANARY") || strings.Contains(r.stdout, "f1") {
			t.Errorf("xfsq %v read through the mount: %q", args, r.stdout)
		}
		if r.code != 2 || !strings.Contains(r.stderr, `"mnt`) || !strings.Contains(r.stderr, why) {
			t.Errorf("xfsq %v: exit %d %q; want 2 naming the path and saying %q", args, r.code, r.stderr, why)
		}
	}
	// The tree's own listing names the mount point but shows nothing of it.
	if out := s.ok("files", "ls", "a"); strings.Contains(out, "f1") || strings.Contains(out, "14 B") {
		t.Errorf("files ls of the tree listed what is behind the mount: %q", out)
	}
}

// files put --from a FIFO returns at once, refusing it as not a regular
// file (exit 2), instead of hanging in open() where no signal reaches it.
func TestFilesPutFromFIFO(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "d")
	fifo := filepath.Join(t.TempDir(), "ff")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Getenv(envBinary), "--root", s.root, "files", "put", "d", "z", "--from", fifo)
	cmd.Env = append(os.Environ(), s.env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("files put --from a FIFO still hung after 20s (killed): %q", stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), fifo) || !strings.Contains(stderr.String(), "FIFO") {
		t.Errorf("files put --from a FIFO: %v %q; want exit 2 naming the path and saying it is a FIFO", err, stderr.String())
	}
	if _, err := os.Lstat(filepath.Join(s.root, "projects/d/z")); err == nil {
		t.Error("files put --from a FIFO created the file")
	}
}

// files put --from never copies what a tenant's link points to: a path
// under the sandbox root, reached by its own name, through an operator's
// link to a directory in it, or from a working directory in it, is refused
// naming the safe form, and a final link anywhere is not followed. The
// canary outside the root never reaches the project.
func TestFilesPutFromRefusesTenantLinks(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "alpha")
	s.ok("project", "add", "omni")
	outside := t.TempDir()
	canary := filepath.Join(outside, "canary")
	os.WriteFile(canary, []byte("CANARY-SECRET"), 0o600)
	alpha := filepath.Join(s.root, "projects/alpha")
	os.Symlink(canary, filepath.Join(alpha, "report.txt")) // the tenant's swap
	os.WriteFile(filepath.Join(alpha, "plain.txt"), []byte("tenant's own"), 0o644)
	os.Symlink(outside, filepath.Join(alpha, "sub")) // a tenant's directory link
	os.Symlink(alpha, filepath.Join(outside, "alias"))
	os.Symlink(filepath.Join(alpha, "sub"), filepath.Join(outside, "alias-sub"))
	os.Symlink(canary, filepath.Join(outside, "mine"))
	os.WriteFile(filepath.Join(outside, "ok.txt"), []byte("fine"), 0o644)
	for _, c := range []struct{ from, why string }{
		{filepath.Join(alpha, "report.txt"), "files get PROJECT PATH | xfsq files put omni copy"},
		{filepath.Join(alpha, "plain.txt"), "files get PROJECT PATH | xfsq files put omni copy"},
		{filepath.Join(alpha, "sub/canary"), "inside the sandbox root"},
		{filepath.Join(s.root, "projects/../projects/alpha/plain.txt"), "inside the sandbox root"},
		{filepath.Join(outside, "alias/report.txt"), "inside the sandbox root"},
		{filepath.Join(outside, "alias/plain.txt"), "inside the sandbox root"},
		{filepath.Join(outside, "alias-sub/canary"), "inside the sandbox root"},
		{filepath.Join(outside, "mine"), "is a symbolic link"},
		// A process's root and cwd links hold a path the process chose.
		{"/proc/self/root" + filepath.Join(outside, "ok.txt"), "goes through a link in /proc"},
	} {
		r := s.run("files", "put", "omni", "copy", "--from", c.from)
		if r.code != 2 || !strings.Contains(r.stderr, c.from) || !strings.Contains(r.stderr, c.why) {
			t.Errorf("files put --from %s: exit %d %q; want 2 naming it and saying %q", c.from, r.code, r.stderr, c.why)
		}
		if _, err := os.Lstat(filepath.Join(s.root, "projects/omni/copy")); err == nil {
			t.Fatalf("files put --from %s wrote the project's file", c.from)
		}
	}
	// A relative --from from a working directory inside the root.
	cmd := exec.Command(os.Getenv(envBinary), "--root", s.root, "files", "put", "omni", "copy", "--from", "report.txt")
	cmd.Dir, cmd.Env = alpha, append(os.Environ(), s.env...)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "inside the sandbox root") {
		t.Errorf("files put --from report.txt in %s: %v %q; want refused as inside the root", alpha, err, out)
	}
	// A plain file outside the root, also through an operator's own
	// directory link, is copied as before.
	opDir := t.TempDir()
	os.Symlink(outside, filepath.Join(opDir, "l"))
	s.ok("files", "put", "omni", "copy", "--from", filepath.Join(opDir, "l/ok.txt"))
	if b, _ := os.ReadFile(filepath.Join(s.root, "projects/omni/copy")); string(b) != "fine" {
		t.Errorf("files put --from a plain file outside the root wrote %q", b)
	}
}
