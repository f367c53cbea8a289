package server_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/client"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// fleetOf indexes a fleet's hosts, live and retired, by name.
func fleetOf(f apiv1.FleetHosts) map[string]apiv1.FleetHost {
	out := map[string]apiv1.FleetHost{}
	for _, h := range append(f.Hosts, f.Retired...) {
		out[h.Host] = h
	}
	return out
}

// TestFleetView: four roots with their own host names on one store, as a
// fleet of hosts sharing one PostgreSQL is: each is listed with its
// heartbeat, fresh or stale (a host that stopped reporting or never did is
// listed stale, never missing); the fleet's trees and events carry their
// host; a host retired leaves the live list, its pending deletion settled
// as abandoned and its history kept.
func TestFleetView(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		ctx := context.Background()
		r.Add(10<<20, "omni")
		b, gone, quiet := r.OtherHost("host-b"), r.OtherHost("host-gone"), r.OtherHost("host-quiet")
		b.Add(10<<20, "omni", "beta")
		quiet.Add(10<<20, "omni")
		for _, h := range []*fixture.Root{r, b} {
			if err := h.Heartbeat(ctx, time.Second); err != nil {
				t.Fatal(err)
			}
		}
		// host-gone beat an hour ago and left a deletion pending;
		// host-quiet never beat at all.
		if _, err := sandbox.TestStore(gone.Manager).Heartbeat(ctx, store.Beat{At: time.Now().Add(-time.Hour), Version: "v0", Backend: "fallback", Root: gone.Manager.Root,
			Interval: time.Second}); err != nil {
			t.Fatal(err)
		}
		pending := journal.Evicted{SweepID: "sw-1", Area: "cache", Path: "cache/omni/old", State: journal.StatePending, Bytes: 99}
		if err := sandbox.TestStore(gone.Manager).InTx(ctx, func(tx *store.Tx) error { return tx.AppendEvent(ctx, "omni", "sweeper", pending) }); err != nil {
			t.Fatal(err)
		}
		ts := newServer(t, r)
		c := ts.client(readerToken)

		fleet, err := c.FleetHosts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		hosts := fleetOf(fleet)
		for _, w := range []struct {
			host           string
			stale, seen    bool
			projects       int64
			this, isRetird bool
		}{
			{"test-host", false, true, 1, true, false}, {"host-b", false, true, 2, false, false},
			{"host-gone", true, true, 0, false, false}, {"host-quiet", true, false, 1, false, false},
		} {
			h, ok := hosts[w.host]
			switch {
			case !ok:
				t.Errorf("%s is missing from the fleet: %+v", w.host, fleet)
			case h.Stale != w.stale || (h.LastSeenAt != nil) != w.seen || h.Projects != w.projects || h.This != w.this:
				t.Errorf("%s = %+v, want stale %v, seen %v, %d projects, this %v", w.host, h, w.stale, w.seen, w.projects, w.this)
			}
		}
		if h := hosts["host-b"]; h.Root != b.Manager.Root || h.Backend != "fallback" || h.Version == "" || h.AgeSeconds == nil {
			t.Errorf("host-b's heartbeat lost what it said: %+v", h)
		}

		st, err := c.FleetStorage(ctx, "host-b")
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range st.Trees {
			if tr.Host != "host-b" {
				t.Errorf("host-b's storage holds a tree of %s: %+v", tr.Host, tr)
			}
		}
		if len(st.Trees) == 0 || len(st.Hosts) != 1 {
			t.Errorf("host-b's storage: %+v", st)
		}
		all, err := c.FleetStorage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var treeHosts []string
		for _, tr := range all.Trees {
			treeHosts = append(treeHosts, tr.Host)
		}
		for _, h := range []string{"test-host", "host-b", "host-quiet"} {
			if !slices.Contains(treeHosts, h) {
				t.Errorf("the fleet's storage has no tree of %s: %v", h, treeHosts)
			}
		}
		if _, err := c.FleetStorage(ctx, "host-typo"); status(err) != http.StatusNotFound {
			t.Errorf("storage of an unknown host: %v, want 404", err)
		}

		page, err := c.Events(ctx, client.EventQuery{AllHosts: true, Type: string(journal.TypeProjectAdded), Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		added := map[string]int{}
		for _, e := range page.Events {
			added[e.Host]++
		}
		if added["test-host"] != 1 || added["host-b"] != 2 || added["host-quiet"] != 1 {
			t.Errorf("project.added across hosts: %v", added)
		}
		page, err = c.Events(ctx, client.EventQuery{Hosts: []string{"host-b"}, Limit: 100})
		if err != nil || len(page.Events) == 0 {
			t.Fatalf("host-b's events: %+v, %v", page, err)
		}
		for _, e := range page.Events {
			if e.Host != "host-b" {
				t.Errorf("host-b's events hold one of %s", e.Host)
			}
		}

		// A reader limited to some projects does not see across hosts.
		lim := ts.client(limitedToken)
		if _, err := lim.FleetHosts(ctx); status(err) != http.StatusForbidden {
			t.Errorf("limited reader's fleet: %v, want 403", err)
		}
		if _, err := lim.Events(ctx, client.EventQuery{AllHosts: true}); status(err) != http.StatusBadRequest {
			t.Errorf("limited reader's events of all hosts: %v, want 400", err)
		}

		op := ts.client(operatorToken)
		for _, c := range []struct {
			host string
			want int
		}{{"host-b", http.StatusConflict}, {"test-host", http.StatusConflict}, {"host-typo", http.StatusNotFound}} {
			if _, err := op.RetireHost(ctx, c.host, false); status(err) != c.want {
				t.Errorf("retire %s: %v, want %d", c.host, err, c.want)
			}
		}
		ret, err := op.RetireHost(ctx, "host-gone", false)
		if err != nil {
			t.Fatal(err)
		}
		if len(ret.Abandoned) != 1 || ret.Abandoned[0].Path != pending.Path || ret.Already {
			t.Errorf("retire host-gone = %+v, want its one pending deletion abandoned", ret)
		}
		if again, err := op.RetireHost(ctx, "host-gone", false); err != nil || !again.Already || !again.RetiredAt.Equal(ret.RetiredAt) {
			t.Errorf("retire host-gone again = %+v, %v; want already, at the first time", again, err)
		}
		fleet, _ = c.FleetHosts(ctx)
		if slices.ContainsFunc(fleet.Hosts, func(h apiv1.FleetHost) bool { return h.Host == "host-gone" }) ||
			len(fleet.Retired) != 1 || fleet.Retired[0].RetiredBy != "ops" {
			t.Errorf("after retiring host-gone: live %+v, retired %+v", fleet.Hosts, fleet.Retired)
		}
		page, _ = c.Events(ctx, client.EventQuery{Hosts: []string{"host-gone"}, Limit: 100})
		var types []string
		for _, e := range page.Events {
			types = append(types, e.Type)
		}
		if !slices.Equal(types, []string{string(journal.TypeHostRetired), string(journal.TypeEvicted), string(journal.TypeEvicted), string(journal.TypeRootInitialised), string(journal.TypeRootBound)}) {
			t.Errorf("host-gone's journal after retirement: %v; want its history kept, the deletion abandoned, then host.retired", types)
		}
		if err := gone.Heartbeat(ctx, time.Second); err == nil {
			t.Error("a retired host's heartbeat said nothing of its retirement")
		}
		var pe *client.ProblemError
		if _, err := op.RetireHost(ctx, "host-b", false); !errors.As(err, &pe) || pe.Fix == "" {
			t.Errorf("refusing a live host: %v, want a problem with a fix", err)
		}
		const retireB = "/v1/fleet/hosts/host-b/retire"
		for _, c := range []struct {
			body, contentType string
			want              int
		}{
			{`{"force": "yes"}`, "application/json", http.StatusBadRequest},
			{`{"force": true, "pad": "` + strings.Repeat("x", 2<<20) + `"}`, "application/json", http.StatusRequestEntityTooLarge},
			{`force=true`, "application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		} {
			req, _ := http.NewRequest("POST", ts.URL+retireB, strings.NewReader(c.body))
			req.Header.Set("Content-Type", c.contentType)
			req.Header.Set("Authorization", "Bearer "+operatorToken)
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("retire with %.40s (%s): %d, want %d", c.body, c.contentType, resp.StatusCode, c.want)
			}
		}
		if ret, err := op.RetireHost(ctx, "host-b", true); err != nil || ret.Already {
			t.Errorf("retire host-b, still reporting, with force: %+v, %v", ret, err)
		}
	})
}
