package server_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// newTab is a tab of ctx's browser, open for the test's life.
func newTab(t *testing.T, ctx context.Context) browser {
	t.Helper()
	tab, cancel := chromedp.NewContext(ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(tab); err != nil {
		t.Fatal(err)
	}
	return browser{t, tab}
}

// storeTrees stores a snapshot of a tree per hour from hours ago to 1 h
// ago, its size growing a MiB an hour; its kept tree is before until a
// day ago and after since (store.HistoryEvery keeps one of each).
func storeTrees(t *testing.T, r *fixture.Root, project string, hours int, before, after *inventory.Node) {
	t.Helper()
	now := time.Now()
	err := sandbox.TestStore(r.Manager).InTx(r.Ctx, func(tx *store.Tx) error {
		for h := hours; h >= 1; h-- {
			tree := before
			if h < 24 {
				tree = after
			}
			s := store.Snapshot{Project: project, Area: "workspace", At: now.Add(-time.Duration(h) * time.Hour), SizeBytes: uint64(hours-h+1) << 20, KernelBytes: -1}
			if err := tx.AddSnapshot(r.Ctx, s, inventory.AppendStored(nil, tree, nil), 35*24*time.Hour); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A project's page in a browser against a real server, on both store
// drivers: its usage chart draws every stored snapshot of the window (from
// the history route, not the passes' records); "what changed in 24 h"
// lists what grew, shrank, is new and is gone with their figures, the
// tenant's names in it written as escapes and inert; a project with no
// snapshot a day old says so instead of an empty section.
func TestDashboardDiffSection(t *testing.T) {
	ctx := chromium(t)
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(100<<20, "omni", "fresh")
		node := func(name string, mib uint64) *inventory.Node {
			return &inventory.Node{Path: name, SizeBytes: mib << 20}
		}
		before := &inventory.Node{Path: ".", SizeBytes: 9 << 20, Children: []*inventory.Node{node("src", 2), node("logs", 4), node(hostileDir, 3)}}
		after := &inventory.Node{Path: ".", SizeBytes: 10 << 20, Children: []*inventory.Node{node("src", 7), node("logs", 1), node(hostileFile, 2)}}
		storeTrees(t, r, "omni", 40, before, after)
		storeTrees(t, r, "fresh", 2, after, after)
		ts := newServer(t, r)
		b := newTab(t, ctx)
		b.login(ts.URL, readerToken)

		b.goTo("/storage/omni")
		if n := eval[int](b, `document.querySelector('#project-chart polyline[data-series="workspace"]').getAttribute("points").split(" ").length`); n != 41 {
			t.Errorf("the workspace's line has %d points, want the 40 stored snapshots and now", n)
		}
		if summary := b.text("#diff-summary"); !strings.Contains(summary, "+1.0 MiB in the workspace") || !strings.Contains(summary, "(9.0 MiB) to") {
			t.Errorf("the diff's summary: %q", summary)
		}
		lists := eval[map[string]string](b, `Object.fromEntries([...document.querySelectorAll("#diff table")].map(t => [t.dataset.diff, t.innerText]))`)
		for key, want := range map[string][]string{
			"grew": {"src", "+5.0 MiB (2.0 MiB → 7.0 MiB)"}, "shrank": {"logs", "-3.0 MiB (4.0 MiB → 1.0 MiB)"},
			"new": {hostileShow, "2.0 MiB"}, "gone": {hostileDir, "3.0 MiB"},
		} {
			for _, w := range want {
				if !strings.Contains(lists[key], w) {
					t.Errorf("the diff's %s list %q lacks %q", key, lists[key], w)
				}
			}
		}
		if all := b.text("#diff"); strings.Contains(all, "\u202e") || strings.Contains(all, "\x01") {
			t.Errorf("the diff shows a tenant's bidi override or control character raw: %q", all)
		}
		b.inert("the diff")

		b.goTo("/storage/fresh")
		if none := b.text("#diff-none"); !strings.Contains(none, "no snapshot of fresh workspace is kept from 24h") {
			t.Errorf("a project without a day of snapshots: %q", none)
		}
		if eval[bool](b, `document.getElementById("diff-section").hidden`) {
			t.Error("the diff section is hidden instead of saying why there is nothing to compare")
		}
	})
}

// The fleet in a browser, on both store drivers: three hosts share the
// store, one stale. The hosts page lists each with when it was last seen
// and the stale one marked; the header's host selector lists them and
// opens another host's trees from the shared store (figures and their
// age, the stale host's warned about), and back to this host's overview;
// a reader limited to some projects, whom the fleet's routes refuse, gets
// no selector and no Hosts link.
func TestDashboardHosts(t *testing.T) {
	ctx := chromium(t)
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		bg := context.Background()
		r.Add(10<<20, "omni")
		hb, stale := r.OtherHost("host-b"), r.OtherHost("host-stale")
		hb.Add(10<<20, "beta", "gamma")
		stale.Add(10<<20, "delta")
		for _, h := range []*fixture.Root{r, hb} {
			if err := h.Heartbeat(bg, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := sandbox.TestStore(stale.Manager).Heartbeat(bg, store.Beat{At: time.Now().Add(-3 * time.Hour), Version: "v0", Backend: "fallback",
			Root: stale.Manager.Root, Interval: time.Minute}); err != nil {
			t.Fatal(err)
		}
		ts := newServer(t, r)
		b := newTab(t, ctx)
		b.login(ts.URL, readerToken)
		b.do(chromedp.WaitVisible(chromedp.ID("host-pick")))
		if opts := eval[string](b, `[...document.querySelectorAll("#host-select option")].map(o => o.textContent).join("|")`); opts != "test-host (this one)|host-b|host-stale (stale)" &&
			opts != "host-b|host-stale (stale)|test-host (this one)" {
			t.Errorf("the host selector offers %q", opts)
		}

		b.goTo("/hosts")
		rows := eval[map[string]string](b, `Object.fromEntries([...document.querySelectorAll("#host-list tbody tr")].map(r => [r.dataset.host, r.innerText]))`)
		for host, want := range map[string][]string{"test-host": {"(this one)", "fresh", "ago"}, "host-b": {"fresh", "ago", "2"}, "host-stale": {"stale", "3h0m ago"}} {
			for _, w := range want {
				if !strings.Contains(rows[host], w) {
					t.Errorf("the hosts page's row of %s: %q lacks %q", host, rows[host], w)
				}
			}
		}
		if n := len(rows); n != 3 {
			t.Errorf("the hosts page lists %d hosts, want 3: %v", n, rows)
		}

		pick := func(value, view string) {
			t.Helper()
			eval[bool](b, `(s => (s.value = `+strconv.Quote(value)+`, s.dispatchEvent(new Event("change")), true))(document.getElementById("host-select"))`)
			b.do(chromedp.WaitReady(chromedp.CSS(`body[data-ready=` + strconv.Quote(view) + `]`)))
			b.noError(view)
		}
		pick("host-b", "/hosts/host-b")
		if trees := eval[string](b, `[...document.querySelectorAll("#host-trees tbody tr")].map(r => r.dataset.project + "/" + r.dataset.area).sort().join(" ")`); !strings.Contains(trees, "beta/workspace") ||
			!strings.Contains(trees, "gamma/workspace") || strings.Contains(trees, "omni") {
			t.Errorf("host-b's trees: %q; want beta's and gamma's, none of this host's", trees)
		}
		if !eval[bool](b, `document.getElementById("host-view-stale").hidden`) || !strings.Contains(b.text("#host-view-facts"), "fresh") {
			t.Errorf("host-b is fresh, yet: %q / stale warning shown %v", b.text("#host-view-facts"), !eval[bool](b, `document.getElementById("host-view-stale").hidden`))
		}
		if v := eval[string](b, `document.getElementById("host-select").value`); v != "host-b" {
			t.Errorf("the selector shows %q on host-b's view", v)
		}
		pick("host-stale", "/hosts/host-stale")
		if warn := b.text("#host-view-stale"); !strings.Contains(warn, "stale") || !strings.Contains(warn, "3h0m ago") {
			t.Errorf("the stale host's warning: %q", warn)
		}
		pick("", "/")
		if v := eval[string](b, `document.getElementById("host-select").value`); v != "" || !strings.Contains(b.text("#host"), "test-host") {
			t.Errorf("back to this host: selector %q, header %q", v, b.text("#host"))
		}
		b.inert("the fleet's views")
		b.do(chromedp.EmulateViewport(375, 800))
		for _, view := range []string{"/hosts", "/hosts/host-b"} {
			b.goTo(view)
			if w := eval[int](b, `document.documentElement.scrollWidth`); w > 375 {
				t.Errorf("at 375 px the view %s is %d px wide", view, w)
			}
		}
		b.do(chromedp.EmulateViewport(1280, 900))

		// A reader limited to some projects: no fleet for it.
		b.login(ts.URL, limitedToken)
		if eval[bool](b, `!document.getElementById("host-pick").hidden || !document.getElementById("nav-hosts").hidden`) {
			t.Error("a limited reader, whom the fleet's routes refuse, is offered the host selector or the Hosts link")
		}
	})
}
