package main

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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
			if !errors.As(err, &ee) || ee.ExitCode() != 128+int(sig) || !strings.Contains(stderr.String(), "interrupted") {
				t.Errorf("after %s: %v, stderr %q; want exit %d saying interrupted", unix.SignalName(sig), err, stderr.String(), 128+int(sig))
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
