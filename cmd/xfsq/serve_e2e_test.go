package main

// End-to-end tests of the built binary's `xfsq serve`, over real HTTP with
// the Go client, against the same root the CLI reads: what the API answers
// must be what the CLI says, and a serve killed mid-sweep must leave no
// deletion without its record.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xfsq/xfsq/health"
	"github.com/xfsq/xfsq/internal/fault"
	"github.com/xfsq/xfsq/internal/testsupport/promtest"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/internal/testsupport/treetest"
)

const e2eToken = "e2e-operator-token-0123456789"

// operatorTokens writes a token file with one operator token, e2eToken.
func operatorTokens(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "tokens.csv")
	writeTokens(t, f, e2eToken+",e2e,operator\n")
	return f
}

// processState is the state letter of /proc/PID/stat ("T" when stopped).
func processState(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// pid (comm) state …: comm may hold spaces and parentheses.
	rest := string(data[bytes.LastIndexByte(data, ')')+1:])
	f := strings.Fields(rest)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// waitForStop waits up to 30 s for pid to stop at its fault point
// (SIGSTOP); whyNot says why it did not, for the failure.
func waitForStop(t *testing.T, pid int, whyNot func() string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); processState(pid) != "T"; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not stop at its fault point (state %q): %s", pid, processState(pid), whyNot())
		}
	}
}

// evictionRecords is every path's storage.evicted states, oldest first, as
// `xfsq events` gives them.
func evictionRecords(s *testRoot) map[string][]string {
	s.t.Helper()
	var evs []map[string]any
	s.json(&evs, "events", "--type", "storage.evicted", "--limit", "1000")
	out := map[string][]string{}
	for i := len(evs) - 1; i >= 0; i-- { // newest first
		p, _ := evs[i]["path"].(string)
		st, _ := evs[i]["state"].(string)
		out[p] = append(out[p], st)
	}
	return out
}

// TestServeKilledDuringAPISweep: the real `xfsq serve`, paused by a fault
// point at its Nth deletion of an API sweep (pending record written, entry
// not yet removed, or removed and its done record not yet written), is
// killed with SIGKILL. The next start settles the interrupted deletion
// before anything else (done if gone, failed if still there): no record
// stays pending, every path gone has its pending and done records, every
// path left has none or pending then failed; the next sweep over the API
// finishes the job.
func TestServeKilledDuringAPISweep(t *testing.T) {
	const entries = 6
	for _, d := range storetest.Drivers() {
		for i, point := range []string{"sweep:after-pending", "sweep:after-delete"} {
			nth := 2 + i*2 // a deletion in the middle, not the first
			t.Run(d.Name+"/"+point, func(t *testing.T) {
				s := fallbackSandbox(t, d.DSN(t))
				s.ok("project", "add", "omni")
				s.ok("settings", "set", "cache_quota_per_project", "1k")
				var paths []string
				for i := range entries {
					p := fmt.Sprintf("cache/omni/e%02d", i)
					treetest.Aged(t, s.root, p+"/f", 4096, 20+i)
					paths = append(paths, p)
				}
				tokens := operatorTokens(t)
				paused := *s
				paused.env = append(append([]string{}, s.env...), fmt.Sprintf("%s=%s#%d", fault.Env, point, nth), fault.ActionEnv+"=stop")
				sv := paused.serve(t, tokens)
				c := sv.client(e2eToken)
				ctx := context.Background()
				plan, err := c.PlanSweep(ctx, "omni")
				if err != nil || len(plan.Entries) != entries {
					t.Fatalf("dry run: %v, %d entries, want %d", err, len(plan.Entries), entries)
				}
				applied := make(chan error, 1)
				go func() {
					_, err := c.ApplyPlan(ctx, "omni", plan.PlanID)
					applied <- err
				}()
				pid := sv.cmd.Process.Pid
				waitForStop(t, pid, func() string { return fmt.Sprintf("serve at %s#%d:\n%s", point, nth, sv.logs()) })
				if err := sv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				<-sv.done
				if ws, ok := sv.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
					t.Fatalf("serve ended with %v, want SIGKILL", sv.cmd.ProcessState)
				}
				if err := <-applied; err == nil {
					t.Fatal("the sweep request answered although serve was killed during it")
				}
				if pending, err := s.store().PendingEvictions(ctx); err != nil || len(pending) != 1 {
					t.Fatalf("after the kill: %d pending records (%v), want the one interrupted", len(pending), err)
				}
				gone := 0
				for _, p := range paths {
					if !treetest.Exists(filepath.Join(s.root, p)) {
						gone++
					}
				}
				if want := map[string]int{"sweep:after-pending": nth - 1, "sweep:after-delete": nth}[point]; gone != want {
					t.Errorf("%d entries gone at the kill, want %d", gone, want)
				}

				again := s.serve(t, tokens)
				again.waitLog(`"msg":"settled deletions interrupted before this start","records":1`)
				if pending, err := s.store().PendingEvictions(ctx); err != nil || len(pending) != 0 {
					t.Fatalf("pending records after the restart: %+v (%v)", pending, err)
				}
				states := evictionRecords(s)
				for _, p := range paths {
					st := fmt.Sprint(states[p])
					switch {
					case !treetest.Exists(filepath.Join(s.root, p)) && st != "[pending done]":
						t.Errorf("%s is gone with records %s, want [pending done]", p, st)
					case treetest.Exists(filepath.Join(s.root, p)) && st != "[]" && st != "[pending failed]":
						t.Errorf("%s is still there with records %s", p, st)
					}
				}

				c = again.client(e2eToken)
				if plan, err = c.PlanSweep(ctx, "omni"); err != nil {
					t.Fatalf("dry run after the restart: %v", err)
				}
				if _, err := c.ApplyPlan(ctx, "omni", plan.PlanID); err != nil {
					t.Fatalf("sweep after the restart: %v", err)
				}
				states = evictionRecords(s)
				for _, p := range paths {
					if st := states[p]; treetest.Exists(filepath.Join(s.root, p)) || len(st) == 0 || st[len(st)-1] != "done" {
						t.Errorf("after the second sweep %s: exists %v, records %v", p, treetest.Exists(filepath.Join(s.root, p)), st)
					}
				}
			})
		}
	}
}

// TestServeHealthEqualsTheCLI: GET /v1/system/health of the real serve
// and `xfsq health --json` on the same root give the same parts with the
// same statuses and the same fixed figures (sizes, cores, backend); the
// figures that move between two reads (free bytes, load, latency) only
// within a margin.
func TestServeHealthEqualsTheCLI(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	sv := s.serve(t, operatorTokens(t))
	// Read as the library's report, to compare with the CLI's field for field.
	var api health.Report
	err := sv.client(e2eToken).Do(context.Background(), "GET", "/v1/system/health", nil, nil, &api)
	if err != nil {
		t.Fatalf("GET /v1/system/health: %v", err)
	}
	r := s.run("--json", "health")
	var cli health.Report
	if err := json.Unmarshal([]byte(r.stdout), &cli); err != nil || (r.code != 0 && r.code != 1) {
		t.Fatalf("xfsq health --json: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if health.Failing(cli.Status) != (r.code == 1) {
		t.Errorf("xfsq health exited %d with status %s", r.code, cli.Status)
	}
	if api.Status != cli.Status {
		t.Errorf("status: API %s, CLI %s", api.Status, cli.Status)
	}
	names := func(rep health.Report) (out []string) {
		for _, p := range health.Parts(rep) {
			out = append(out, p.Name+"="+string(p.Part.Status)+" "+p.Part.Reason+" "+p.Part.Error)
		}
		return out
	}
	// A part's reason or error may hold a figure that moved (a free
	// percentage); the name and status never may.
	an, cn := names(api), names(cli)
	if len(an) == 0 || len(an) != len(cn) {
		t.Fatalf("parts: API %q, CLI %q", an, cn)
	}
	for i := range an {
		a, _, _ := strings.Cut(an[i], " ")
		c, _, _ := strings.Cut(cn[i], " ")
		if a != c {
			t.Errorf("part %d: API %q, CLI %q", i, an[i], cn[i])
		}
	}
	near := func(what string, a, b, margin float64) {
		t.Helper()
		if d := a - b; d > margin || d < -margin {
			t.Errorf("%s: API %v, CLI %v (margin %v)", what, a, b, margin)
		}
	}
	if api.Disk == nil || cli.Disk == nil || len(api.Disk.Paths) != len(cli.Disk.Paths) || len(api.Disk.Paths) == 0 {
		t.Fatalf("disk: API %+v, CLI %+v", api.Disk, cli.Disk)
	}
	for i, a := range api.Disk.Paths {
		c := cli.Disk.Paths[i]
		if a.Path != c.Path || a.Area != c.Area || a.TotalBytes != c.TotalBytes || a.TotalInodes != c.TotalInodes || a.Error != c.Error ||
			a.SameFilesystemAsRoot != c.SameFilesystemAsRoot {
			t.Errorf("disk path %d: API %+v, CLI %+v", i, a, c)
		}
		near("free bytes of "+a.Path, float64(a.AvailableBytes), float64(c.AvailableBytes), 1<<30)
		near("free % of "+a.Path, a.FreePercent, c.FreePercent, 2)
	}
	if api.CPU == nil || cli.CPU == nil || api.CPU.Cores != cli.CPU.Cores {
		t.Errorf("cpu: API %+v, CLI %+v", api.CPU, cli.CPU)
	} else {
		near("load5", api.CPU.Load5, cli.CPU.Load5, 2)
	}
	if api.Memory == nil || cli.Memory == nil || api.Memory.TotalBytes != cli.Memory.TotalBytes || api.Memory.SwapTotalBytes != cli.Memory.SwapTotalBytes {
		t.Errorf("memory: API %+v, CLI %+v", api.Memory, cli.Memory)
	}
	if api.Quota == nil || cli.Quota == nil || api.Quota.Backend != cli.Quota.Backend {
		t.Errorf("quota: API %+v, CLI %+v", api.Quota, cli.Quota)
	}
	if api.Store == nil || cli.Store == nil || api.Store.Reachable != cli.Store.Reachable || !api.Store.Reachable {
		t.Errorf("store: API %+v, CLI %+v", api.Store, cli.Store)
	}
	if (api.Docker == nil) != (cli.Docker == nil) {
		t.Fatalf("docker: API %+v, CLI %+v", api.Docker, cli.Docker)
	}
	// The engine is the host's, shared with whatever else builds and runs
	// containers on it: its counts may move between the two reads.
	if api.Docker != nil && (api.Docker.Host != cli.Docker.Host || api.Docker.Error != cli.Docker.Error) {
		t.Errorf("docker: API %+v, CLI %+v", api.Docker, cli.Docker)
	}
}

// TestServeMetricsInPrometheus: a real Prometheus server scrapes the real
// serve's /metrics, and its query API returns each workspace's
// xfsq_tree_used_bytes as `xfsq report --json` gives used_bytes.
func TestServeMetricsInPrometheus(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni", "--bytes-hard", "10m")
	s.ok("project", "add", "other")
	for name, size := range map[string]int{"omni": 300_000, "other": 70_000} {
		f := filepath.Join(t.TempDir(), "data")
		os.WriteFile(f, bytes.Repeat([]byte("x"), size), 0o644)
		s.ok("files", "put", name, "data", "--from", f)
	}
	sv := s.serve(t, operatorTokens(t))
	api := promtest.Start(t, "http://"+sv.addr+"/metrics")
	rep := s.report()
	for _, name := range []string{"omni", "other"} {
		want := rep[name+"/workspace"].UsedBytes
		if want == 0 {
			t.Fatalf("report: %s/workspace uses no bytes: %+v", name, rep[name+"/workspace"])
		}
		q := fmt.Sprintf(`xfsq_tree_used_bytes{project=%q,area="workspace"}`, name)
		if got := promtest.QueryOne(t, api, q); got != float64(want) {
			t.Errorf("%s = %v in Prometheus, xfsq report --json says %d", q, got, want)
		}
	}
}
