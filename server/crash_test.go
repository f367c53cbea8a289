package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	apiv1 "github.com/xfsq/xfsq/api/v1"

	"github.com/xfsq/xfsq/internal/fault"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/internal/testsupport/treetest"
	"github.com/xfsq/xfsq/sandbox"
)

// The crash test's child: this test binary, run with these set, serves the
// sweep endpoint over the root as xfsq serve does (daemon.Passes settles first),
// prints "listening URL settled N" and serves until killed.
const (
	envChildRoot = "XFSQ_SERVER_TEST_ROOT"
	envChildDSN  = "XFSQ_SERVER_TEST_DSN"
)

func TestSweepServerChild(t *testing.T) {
	rootDir := os.Getenv(envChildRoot)
	if rootDir == "" {
		return // only the crash test's child process serves
	}
	ctx := context.Background()
	r, err := sandbox.OpenRoot(ctx, sandbox.Config{Root: rootDir, DSN: os.Getenv(envChildDSN), Host: fixture.Host, ProjectFiles: []string{}})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	settled, err := r.SettleInterrupted(sandbox.WithActor(ctx, "xfsq-serve/scheduled"))
	if err != nil {
		fmt.Println("settle:", err)
		os.Exit(1)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx := sandbox.WithActor(withCaller(req.Context(), operator), operator.Name)
		mux := http.NewServeMux()
		mux.Handle(sweepRoute, answered(log, newSweepAPI(r).Sweep))
		mux.ServeHTTP(w, req.WithContext(ctx))
	}))
	fmt.Printf("listening %s settled %d\n", srv.URL, settled)
	io.Copy(io.Discard, os.Stdin) // until the parent closes it, or kills this process
	srv.Close()
	r.Close()
	os.Exit(0)
}

// faultBinary is this package's test binary built with the fault tag, so
// that XFSQ_FAULT kills the child at a point of a deletion.
func faultBinary(t *testing.T) string {
	t.Helper()
	if fault.Armed {
		return os.Args[0]
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatal("the crash test builds its child with go: not found")
	}
	bin := filepath.Join(t.TempDir(), "server.test")
	out, err := exec.Command("go", "test", "-c", "-tags", fault.Tag, "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("build the child with -tags %s: %v\n%s", fault.Tag, err, out)
	}
	return bin
}

type child struct {
	cmd     *exec.Cmd
	url     string
	settled int
	stdin   io.Closer
}

func startChild(t *testing.T, bin string, r *fixture.Root, faultAt string) *child {
	t.Helper()
	cmd := exec.Command(bin, "-test.run=^TestSweepServerChild$")
	cmd.Env = append(os.Environ(), envChildRoot+"="+r.Manager.Root, envChildDSN+"="+r.DSN)
	if faultAt != "" {
		cmd.Env = append(cmd.Env, fault.Env+"="+faultAt)
	}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	c := &child{cmd: cmd, stdin: stdin}
	if _, err2 := fmt.Sscanf(line, "listening %s settled %d", &c.url, &c.settled); err != nil || err2 != nil {
		t.Fatalf("the child said %q (%v, %v)", line, err, err2)
	}
	return c
}

func (c *child) post(t *testing.T, body string) (*http.Response, []byte, error) {
	t.Helper()
	resp, err := http.Post(c.url+"/v1/workspace/storage/projects/omni/sweep", "application/json", strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp, data, err
}

// evictionStates is every path's storage.evicted records, oldest first.
func evictionStates(t *testing.T, r *fixture.Root) map[string][]string {
	states := map[string][]string{}
	evs := r.Events("storage.evicted")
	for i := len(evs) - 1; i >= 0; i-- {
		var rec struct{ Path, State string }
		if err := json.Unmarshal(evs[i].Payload, &rec); err != nil {
			t.Fatal(err)
		}
		states[rec.Path] = append(states[rec.Path], rec.State)
	}
	return states
}

// xfsq serve killed with SIGKILL during an API sweep, at a deletion (its
// pending record written, before or after the removal), and started again:
// the start settles the interrupted deletion (done if it went, failed if
// it is still there), so no record stays pending and no entry is gone
// without its record; the next sweep over the API finishes the job.
func TestAPISweepKilledMidway(t *testing.T) {
	bin := faultBinary(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	const entries = 6
	for _, d := range storetest.Drivers() {
		for _, point := range []string{"sweep:after-pending", "sweep:after-delete"} {
			t.Run(d.Name+"/"+point, func(t *testing.T) {
				r := fixture.New(t, d.Name, d.DSN(t))
				r.Add(1<<30, "omni")
				if _, _, err := r.Manager.SetSetting(r.Ctx, "cache_quota_per_project", "1k"); err != nil {
					t.Fatal(err)
				}
				var paths []string
				for i := range entries {
					p := fmt.Sprintf("cache/omni/e%02d", i)
					treetest.Aged(t, r.Manager.Root, p+"/f", 4096, 20+i)
					paths = append(paths, p)
				}
				nth := 1 + rng.IntN(entries)
				first := startChild(t, bin, r, fmt.Sprintf("%s#%d", point, nth))
				resp, data, err := first.post(t, `{"dry_run": true}`)
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("dry run: %v %s", err, data)
				}
				var plan apiv1.SweepPlan
				json.Unmarshal(data, &plan)
				if len(plan.Entries) != entries {
					t.Fatalf("the plan has %d entries, want %d", len(plan.Entries), entries)
				}
				if resp, data, err := first.post(t, `{"plan_id": "`+plan.PlanID+`"}`); err == nil {
					t.Fatalf("the sweep answered %d %s: the child was not killed at %s#%d", resp.StatusCode, data, point, nth)
				}
				err = first.cmd.Wait() // reaped: a zombie would still look alive
				var exit *exec.ExitError
				if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
					t.Fatalf("the child ended with %v, want SIGKILL", err)
				}
				if pending, err := sandbox.TestStore(r.Manager).PendingEvictions(r.Ctx); err != nil || len(pending) != 1 {
					t.Fatalf("after the kill: %d pending records (%v), want the one interrupted", len(pending), err)
				}

				second := startChild(t, bin, r, "")
				if second.settled != 1 {
					t.Errorf("the restart settled %d records, want 1", second.settled)
				}
				if pending, _ := sandbox.TestStore(r.Manager).PendingEvictions(r.Ctx); len(pending) != 0 {
					t.Fatalf("pending records left after the restart: %+v", pending)
				}
				states := evictionStates(t, r)
				for _, p := range paths {
					st := states[p]
					gone := !treetest.Exists(filepath.Join(r.Manager.Root, p))
					switch {
					case gone && (len(st) != 2 || st[0] != "pending" || st[1] != "done"):
						t.Errorf("%s is gone with records %v, want pending then done", p, st)
					case !gone && len(st) != 0 && fmt.Sprint(st) != "[pending failed]":
						t.Errorf("%s is still there with records %v", p, st)
					}
				}

				resp, data, err = second.post(t, `{"dry_run": true}`)
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("dry run after the restart: %v %s", err, data)
				}
				json.Unmarshal(data, &plan)
				if resp, data, err = second.post(t, `{"plan_id": "`+plan.PlanID+`"}`); err != nil || resp.StatusCode != 200 {
					t.Fatalf("sweep after the restart: %v %s", err, data)
				}
				states = evictionStates(t, r)
				for _, p := range paths {
					if st := states[p]; treetest.Exists(filepath.Join(r.Manager.Root, p)) || st[len(st)-1] != "done" {
						t.Errorf("after the second sweep %s: exists %v, records %v", p, treetest.Exists(filepath.Join(r.Manager.Root, p)), st)
					}
				}
				second.stdin.Close()
			})
		}
	}
}
