package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// hostSandbox is a root of its own on the shared store dsn, as host.
func hostSandbox(t *testing.T, dsn, host string) *testRoot {
	s := newSandbox(t, t.TempDir(), dsn)
	s.env = []string{"XFSQ_HOST=" + host}
	s.ok("init")
	return s
}

// TestHostListReportEventsAndRetire drives the fleet through the binary:
// three roots with their own --host on one store.
func TestHostListReportEventsAndRetire(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		// On SQLite, roots sharing one file stand for hosts sharing one PostgreSQL.
		a, b, gone := hostSandbox(t, dsn, "host-a"), hostSandbox(t, dsn, "host-b"), hostSandbox(t, dsn, "host-gone")
		a.ok("project", "add", "omni", "--bytes-hard", "1m")
		b.ok("project", "add", "omni", "--bytes-hard", "2m")
		b.ok("project", "add", "beta", "--bytes-hard", "2m")
		ctx := context.Background()
		st, err := store.Open(ctx, dsn, "host-b")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := st.Heartbeat(ctx, store.Beat{At: time.Now(), Version: "v9", Backend: "fallback", Root: b.root, Interval: time.Second}); err != nil {
			t.Fatal(err)
		}
		var fleet sandbox.FleetHosts
		a.json(&fleet, "host", "list")
		if len(fleet.Hosts) != 3 {
			t.Fatalf("host list = %+v, want host-a, host-b and host-gone", fleet.Hosts)
		}
		for _, h := range fleet.Hosts {
			if fresh := h.Host == "host-b"; h.Stale == fresh {
				t.Errorf("%s stale = %v: only host-b beat", h.Host, h.Stale)
			}
		}
		out := a.ok("host", "list")
		if !strings.Contains(out, "host-a (this)") || !strings.Contains(out, "STALE") || !strings.Contains(out, "v9") {
			t.Errorf("host list:\n%s", out)
		}

		var rows sandbox.FleetStorage
		a.json(&rows, "report", "--on-host", "host-b")
		if len(rows.Trees) == 0 {
			t.Fatal("report --on-host host-b: no trees")
		}
		for _, tr := range rows.Trees {
			if tr.Host != "host-b" {
				t.Errorf("report --on-host host-b holds a tree of %s", tr.Host)
			}
		}
		if out := a.ok("report", "--all-hosts"); !strings.Contains(out, "host-a") || !strings.Contains(out, "host-b") || !strings.Contains(out, "AGE") {
			t.Errorf("report --all-hosts:\n%s", out)
		}
		for _, bad := range [][]string{{"report", "--all-hosts", "--project", "omni"}, {"report", "--on-host", "nosuch"},
			{"report", "--all-hosts", "--on-host", "host-b"}, {"events", "--on-host", "nosuch"}} {
			if r := a.run(bad...); r.code == 0 || r.stderr == "" {
				t.Errorf("xfsq %v: exit %d, want a refusal naming why", bad, r.code)
			}
		}
		var evs []sandbox.Event
		a.json(&evs, "events", "--all-hosts", "--type", string(journal.TypeProjectAdded))
		hosts := map[string]int{}
		for _, e := range evs {
			hosts[e.Host]++
		}
		if hosts["host-a"] != 1 || hosts["host-b"] != 2 {
			t.Errorf("events --all-hosts: %v", hosts)
		}
		if out := a.ok("events", "--on-host", "host-b"); !strings.HasPrefix(out, "host-b  ") {
			t.Errorf("events --on-host host-b: lines do not name their host:\n%s", out)
		}

		if r := a.run("host", "retire", "host-b"); r.code == 0 || !strings.Contains(r.stderr, "--force") {
			t.Errorf("retiring a live host: exit %d %s; want a refusal naming --force", r.code, r.stderr)
		}
		if r := a.run("host", "retire", "host-a"); r.code == 0 {
			t.Error("a host retired itself")
		}
		if out := a.ok("host", "retire", "host-gone"); !strings.Contains(out, "retired host host-gone") {
			t.Errorf("host retire: %s", out)
		}
		a.json(&fleet, "host", "list")
		if len(fleet.Hosts) != 2 || len(fleet.Retired) != 1 || fleet.Retired[0].Host != "host-gone" {
			t.Errorf("after retire: live %+v retired %+v", fleet.Hosts, fleet.Retired)
		}
		if out := gone.ok("events"); !strings.Contains(out, "host host-gone retired") {
			t.Errorf("host-gone's own journal has no retirement:\n%s", out)
		}
	})
}
