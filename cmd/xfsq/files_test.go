package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
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
