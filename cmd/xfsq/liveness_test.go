package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/fault"
	"github.com/xfsq/xfsq/internal/testsupport/prereq"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/internal/testsupport/treetest"
)

// TestSweepOfAHungMachineIsTakenOver: a real `xfsq sweep`, run as if on
// another machine (its own pid namespace: this kernel cannot say whether
// it runs), is frozen at a fault point of its Nth deletion, as a machine
// whose VM is paused or whose link is cut. Its lease lapses; a second
// sweep takes the lock over (journalled), settles the frozen sweep's
// pending deletion from what is on disk and finishes the job. The frozen
// sweep is then thawed: it must stop before touching anything more, and
// the journal must still say each deletion once: every path gone has one
// deletion has one pending and one settled record, and a path is gone
// exactly when its newest record says done.
func TestSweepOfAHungMachineIsTakenOver(t *testing.T) {
	if os.Geteuid() != 0 {
		prereq.Missing(t, "a pid namespace needs root: run the tests as root")
	}
	const entries, nth = 6, 3
	cases := []struct{ point, by string }{
		{"sweep:after-pending", "sweep"},
		{"sweep:after-delete", "sweep"},
		// doctor --fix settles the frozen deletion (failed: the entry is
		// there) and takes no lock and deletes nothing: only the frozen
		// sweep's own lease can stop it from removing the entry after.
		{"sweep:after-pending", "doctor"},
	}
	for _, d := range storetest.Drivers() {
		for _, c := range cases {
			point := c.point
			t.Run(d.Name+"/"+point+"/"+c.by, func(t *testing.T) {
				s := fallbackSandbox(t, d.DSN(t))
				s.ok("project", "add", "omni")
				s.ok("settings", "set", "cache_quota_per_project", "1k")
				s.ok("settings", "set", "holder_heartbeat", "1s")
				s.ok("settings", "set", "holder_expiry", "3s")
				var paths []string
				for i := range entries {
					p := fmt.Sprintf("cache/omni/e%02d", i)
					treetest.Aged(t, s.root, p+"/f", 4096, 20+i)
					paths = append(paths, p)
				}
				frozen := s.startInPidNamespace(t, []string{fmt.Sprintf("%s=%s#%d", fault.Env, point, nth), fault.ActionEnv + "=stop"},
					"sweep", "omni")
				frozen.waitStopped(t)

				time.Sleep(4 * time.Second) // past holder_expiry: no heartbeat from a stopped process
				if c.by == "doctor" {
					s.run("doctor", "--fix") // exit 1: it reports what it found
					if pending, err := s.store().PendingEvictions(t.Context()); err != nil || len(pending) != 0 {
						t.Fatalf("doctor --fix left pending records: %+v (%v)", pending, err)
					}
				} else {
					var res struct {
						Resolved int `json:"resolved_pending"`
					}
					s.json(&res, "sweep", "omni")
					if res.Resolved != 1 {
						t.Errorf("the takeover settled %d pending deletions, want the frozen one", res.Resolved)
					}
					var took []map[string]any
					s.json(&took, "events", "--type", "holder.taken_over")
					if len(took) != 1 {
						t.Fatalf("holder.taken_over records: %v", took)
					}
				}

				code, stderr := frozen.thaw(t)
				if code == 0 {
					t.Errorf("the thawed sweep exited 0 after losing its lock; stderr: %s", stderr)
				}
				if !strings.Contains(stderr, "taken over") && !strings.Contains(stderr, "lease") {
					t.Errorf("the thawed sweep's error does not say it lost its lock: %s", stderr)
				}
				var evs []map[string]any
				s.json(&evs, "events", "--type", "storage.evicted", "--limit", "1000")
				perDeletion := map[string][]string{} // sweep and path: its states, oldest first
				last := map[string]string{}          // path: its newest record's state
				for i := len(evs) - 1; i >= 0; i-- { // newest first
					p, _ := evs[i]["path"].(string)
					sw, _ := evs[i]["sweep_id"].(string)
					st, _ := evs[i]["state"].(string)
					perDeletion[sw+" "+p] = append(perDeletion[sw+" "+p], st)
					last[p] = st
				}
				for k, st := range perDeletion {
					if len(st) != 2 || st[0] != "pending" || st[1] == "pending" {
						t.Errorf("deletion %s has records %v, want pending then one settled record", k, st)
					}
				}
				for _, p := range paths {
					gone := !treetest.Exists(filepath.Join(s.root, p))
					if gone != (last[p] == "done") {
						t.Errorf("%s: gone %v, but its newest record says %q", p, gone, last[p])
					}
				}
				if pending, err := s.store().PendingEvictions(t.Context()); err != nil || len(pending) != 0 {
					t.Errorf("pending records left: %+v (%v)", pending, err)
				}
			})
		}
	}
}

// pidnsProcess is xfsq run in a pid namespace of its own with its own
// /proc, as in a container, under a shell that is the namespace's init
// (an init ignores the SIGSTOP it sends itself).
type pidnsProcess struct {
	cmd    *exec.Cmd
	stderr *strings.Builder
	pid    int // xfsq's pid as this namespace sees it
	done   chan struct{}
}

func (s *testRoot) startInPidNamespace(t *testing.T, env []string, args ...string) *pidnsProcess {
	t.Helper()
	full := []string{"--root", s.root}
	if s.db != "" {
		full = append(full, "--db", s.db)
	}
	// As a container runs: its own /proc, so that its pids are its own
	// namespace's, in a mount namespace that keeps that mount to itself.
	script := `mount --make-rprivate / && mount -t proc proc /proc && "$@"`
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "sh", os.Getenv(envBinary)}, append(full, args...)...)...)
	cmd.Env = append(append(os.Environ(), s.env...), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS}
	p := &pidnsProcess{cmd: cmd, stderr: &strings.Builder{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		if p.pid > 0 {
			syscall.Kill(p.pid, syscall.SIGKILL)
		}
		cmd.Process.Kill()
		<-p.done
	})
	for deadline := time.Now().Add(10 * time.Second); p.pid == 0; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid)); err == nil {
			for _, f := range strings.Fields(string(b)) { // mount's first, then xfsq
				if comm, _ := os.ReadFile("/proc/" + f + "/comm"); strings.TrimSpace(string(comm)) == "xfsq" {
					p.pid, _ = strconv.Atoi(f)
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("xfsq did not start in its pid namespace")
		}
	}
	return p
}

func (p *pidnsProcess) waitStopped(t *testing.T) {
	t.Helper()
	waitForStop(t, p.pid, func() string {
		select {
		case <-p.done:
			return "it ended: " + p.stderr.String()
		default:
			return "it runs"
		}
	})
}

// thaw resumes the stopped xfsq and waits for it: its exit code and stderr.
func (p *pidnsProcess) thaw(t *testing.T) (int, string) {
	t.Helper()
	if err := syscall.Kill(p.pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the thawed sweep did not end: %s", p.stderr)
	}
	p.pid = 0
	return p.cmd.ProcessState.ExitCode(), p.stderr.String()
}
