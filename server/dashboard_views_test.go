package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/sandbox"
)

// login opens the dashboard with a token as a person does, and waits for
// the overview.
func (b browser) login(url, token string) {
	b.t.Helper()
	b.do(chromedp.Navigate(url + "/"))
	eval[bool](b, `sessionStorage.clear(), true`)
	b.do(chromedp.Navigate(url+"/?again"),
		chromedp.WaitVisible(chromedp.ID("login")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.CSS(`#login button[type="submit"]`)),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="/"]`)))
	b.noError("/")
}

// rows is how many rows a table's body shows.
func (b browser) rows(table string) int {
	b.t.Helper()
	return eval[int](b, `document.querySelectorAll("`+table+` tbody tr").length`)
}

// inert fails the test when a tenant's name became markup: an element of
// its making, an event handler attribute, or its script run.
func (b browser) inert(view string) {
	b.t.Helper()
	if eval[bool](b, `window.pwned !== undefined || document.querySelector("main img, main script, main b, main svg svg, main foreignObject, [onload], [onerror]") !== null`) {
		b.t.Errorf("%s: a tenant's name became markup (an element, a handler or a script of its making)", view)
	}
}

// A tenant's name in the dashboard's views, as it appears on the page:
// markup as text, its bidi override and control characters written as
// escapes, as the CLI writes them.
const (
	hostileDir  = `<b onload="window.pwned=3">dir`
	hostileFile = "<img src=x onerror=\"window.pwned=2\">\u202etxt.exe\x01\n"
	hostileShow = `<img src=x onerror="window.pwned=2">\u{202e}txt.exe\x01\n`
)

// Every view of the dashboard against a real server, on both store
// drivers: the overview's charts, the projects table's search, filters and
// keyboard sort, a project's trees with soft limits and grace, its usage
// chart with the limits, its treemap drilled by keyboard, its leases; a
// leased project's dry run says why nothing would go; a sweep waits for
// its confirmation and, once confirmed, its deleted path leaves every view
// (and stays gone on reading them again); the events page filters and
// pages; the health page shows its parts and thresholds; and at a phone's
// width no view is wider than the screen. Tenant names stay inert
// throughout.
func TestDashboardViews(t *testing.T) {
	ctx := chromium(t)
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<20, "alpha", "beta", "gamma")
		ws := func(p string) string { return filepath.Join(r.Manager.Root, "projects", p) }
		write := func(p string, n int) {
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write(filepath.Join(ws("alpha"), "data", hostileDir, hostileFile), 600<<10)
		write(filepath.Join(ws("alpha"), "data", "plain"), 4<<10)
		old := time.Now().Add(-30 * 24 * time.Hour)
		for _, p := range []string{"alpha", "beta"} {
			write(filepath.Join(ws(p), "dist", "old.js"), 80<<10)
			os.Chtimes(filepath.Join(ws(p), "dist", "old.js"), old, old)
			os.Chtimes(filepath.Join(ws(p), "dist"), old, old)
		}
		write(filepath.Join(ws("gamma"), "small"), 4<<10)
		ts := newServer(t, r)
		op := func(method, path, body string) {
			if code, _, resp := ts.raw(t, method, path, operatorToken, body); code != 200 && code != 201 {
				t.Fatalf("%s %s: %d %s", method, path, code, resp)
			}
		}
		op("PATCH", "/v1/workspace/storage/projects/alpha", `{"bytes_soft": 524288}`)
		op("POST", "/v1/workspace/storage/projects/beta/leases/run-7", `{"ttl": "2h"}`)
		for range 2 { // two scheduled passes: the charts' points
			if _, err := r.Manager.Snapshot(r.Ctx, sandbox.SnapshotOptions{Scheduled: true}); err != nil {
				t.Fatal(err)
			}
		}

		tab, cancel := chromedp.NewContext(ctx)
		defer cancel()
		if err := chromedp.Do(tab); err != nil {
			t.Fatal(err)
		}
		b := browser{t, tab}
		b.login(ts.URL, operatorToken)

		// The overview: the disk over the passes, with the disk's size as a line.
		if n := eval[int](b, `document.querySelectorAll("#disk-chart svg circle").length`); n < 3 || !eval[bool](b, `!!document.querySelector("#disk-chart svg line.limit.hard")`) {
			t.Errorf("the disk chart has %d points (want the 2 passes and now) or no line for the disk's size", n)
		}

		// The projects table: search, filters, and a sort made by keyboard.
		b.goTo("/storage")
		if n := b.rows("#projects"); n != 3 {
			t.Fatalf("the projects table shows %d rows, want 3", n)
		}
		b.do(chromedp.SendKeys(chromedp.ID("search"), "gam"))
		if n, text := b.rows("#projects"), b.text("#projects tbody"); n != 1 || !strings.Contains(text, "gamma") {
			t.Errorf("searching gam: %d rows %q", n, text)
		}
		eval[bool](b, `document.getElementById("search").value = "", document.getElementById("search").dispatchEvent(new Event("input")), true`)
		b.do(chromedp.Click(chromedp.ID("f-over-soft")))
		if order := eval[string](b, `[...document.querySelectorAll("#projects tbody tr")].map(r => r.dataset.project).join(" ")`); order != "alpha" {
			t.Errorf("over soft limit: %q, want alpha only (its 600 KiB pass its 512 KiB soft limit)", order)
		}
		b.do(chromedp.Click(chromedp.ID("f-over-soft")), chromedp.SendKeys(chromedp.ID("f-over-pct"), "50"))
		if order := eval[string](b, `[...document.querySelectorAll("#projects tbody tr")].map(r => r.dataset.project).join(" ")`); order != "alpha" {
			t.Errorf("used at least 50 %%: %q, want alpha only", order)
		}
		eval[bool](b, `document.getElementById("f-over-pct").value = "", document.getElementById("f-over-pct").dispatchEvent(new Event("input")), true`)
		b.do(chromedp.Focus(chromedp.CSS(`#projects th[data-key="project"] button`)), chromedp.KeyEvent(kb.Enter))
		order := func() string {
			return eval[string](b, `[...document.querySelectorAll("#projects tbody tr")].map(r => r.dataset.project).join(" ")`)
		}
		if got, sort := order(), eval[string](b, `document.querySelector('#projects th[data-key="project"]').getAttribute("aria-sort")`); got != "alpha beta gamma" || sort != "ascending" {
			t.Errorf("Enter on the project header: %q (aria-sort %q), want alpha beta gamma ascending", got, sort)
		}
		b.do(chromedp.KeyEvent(" "))
		if got := order(); got != "gamma beta alpha" {
			t.Errorf("Space on it again: %q, want gamma beta alpha", got)
		}

		// A project: its trees, chart, treemap, leases.
		b.goTo("/storage/alpha")
		wsRow := b.text(`#trees tr[data-area="workspace"]`)
		if !strings.Contains(wsRow, "512.0 KiB (over)") || !strings.Contains(wsRow, "1.0 MiB") || !strings.Contains(wsRow, "until ") {
			t.Errorf("the workspace's row: %q; want its soft limit passed, its hard limit and its grace", wsRow)
		}
		if b.rows("#trees") < 2 {
			t.Errorf("the trees table shows %d trees, want the workspace and the cache", b.rows("#trees"))
		}
		if !eval[bool](b, `!!document.querySelector("#project-chart line.limit.soft") && !!document.querySelector("#project-chart line.limit.hard") && !!document.querySelector("#project-chart polyline")`) {
			t.Error("the project's chart lacks its usage line or its soft and hard limits")
		}
		b.do(chromedp.Focus(chromedp.CSS(`#treemap g.cell[data-path="data"]`)), chromedp.KeyEvent(kb.Enter),
			chromedp.WaitReady(chromedp.CSS(`#treemap-path button.crumb`)))
		if crumbs, cells := b.text("#treemap-path"), eval[string](b, `[...document.querySelectorAll("#treemap g.cell")].map(c => c.dataset.path).join("|")`); !strings.Contains(crumbs, "data") || !strings.Contains(cells, "data/"+hostileDir) {
			t.Errorf("drilled into data/: crumbs %q, cells %q", crumbs, cells)
		}
		if label := eval[string](b, `document.querySelector("#treemap g.cell:not(.rest)").getAttribute("aria-label")`); !strings.Contains(label, hostileDir) {
			t.Errorf("the treemap cell's label %q does not show the tenant's directory as text", label)
		}
		if files := b.text("#top-files"); !strings.Contains(files, hostileShow) || strings.Contains(files, "\u202e") {
			t.Errorf("the largest files show the tenant's file as %q; want it escaped as %q", files, hostileShow)
		}
		b.inert("a project")

		// A leased project's dry run says why nothing would go.
		b.goTo("/storage/beta")
		if leases := b.text("#leases"); !strings.Contains(leases, "run-7") || !strings.Contains(leases, "held") {
			t.Errorf("the leases: %q", leases)
		}
		b.do(chromedp.Click(chromedp.ID("dry-run")), chromedp.WaitVisible(chromedp.ID("plan")))
		if summary, left := b.text("#plan-summary"), b.text("#plan-skipped"); !strings.Contains(summary, "0 entries,") || !strings.Contains(left, "leased by run run-7") {
			t.Errorf("a leased project's dry run: %q / %q; want nothing to delete and the lease as the reason", summary, left)
		}
		if !eval[bool](b, `document.getElementById("apply").disabled`) {
			t.Error("an empty plan can be swept")
		}

		// A sweep waits for its confirmation; then its path leaves every view.
		b.goTo("/storage/alpha")
		if !strings.Contains(b.text("#top-files"), "dist/old.js") || !eval[bool](b, `!!document.querySelector('#tree details[data-path="dist"]')`) {
			t.Fatal("before the sweep, the largest files or the tree lack dist/")
		}
		b.do(chromedp.Click(chromedp.ID("dry-run")), chromedp.WaitVisible(chromedp.ID("plan")),
			chromedp.Click(chromedp.ID("apply")), chromedp.WaitVisible(chromedp.ID("confirm")))
		// dist/ and its file: 80 KiB of data and the directory's own blocks.
		total := eval[string](b, `iec(current.plan.planned_bytes)`)
		if text := b.text("#confirm-text"); !strings.Contains(text, "1 entry, "+total) || !strings.HasPrefix(total, "8") {
			t.Errorf("the confirmation: %q; want the plan's total, %s", text, total)
		}
		b.do(chromedp.Click(chromedp.ID("confirm-cancel")), chromedp.WaitNotVisible(chromedp.ID("confirm")))
		if _, err := os.Stat(filepath.Join(ws("alpha"), "dist")); err != nil {
			t.Fatalf("cancelled, yet dist/ went: %v", err)
		}
		b.do(chromedp.Click(chromedp.ID("apply")), chromedp.WaitVisible(chromedp.ID("confirm")),
			chromedp.Click(chromedp.ID("confirm-apply")), chromedp.WaitReady(chromedp.CSS(`#sweep-result:not(:empty)`)))
		if _, err := os.Stat(filepath.Join(ws("alpha"), "dist")); !os.IsNotExist(err) {
			t.Fatalf("confirmed, yet dist/ is there: %v (%s)", err, b.text("#sweep-result"))
		}
		gone := func(when string) {
			t.Helper()
			if files := b.text("#top-files"); strings.Contains(files, "dist/") {
				t.Errorf("%s: the largest files still list dist/: %q", when, files)
			}
			if eval[bool](b, `!!document.querySelector('#tree details[data-path="dist"], #treemap g.cell[data-path="dist"]')`) {
				t.Errorf("%s: the tree or the treemap still shows dist/", when)
			}
		}
		gone("after the sweep")
		b.goTo("/storage")
		b.goTo("/storage/alpha")
		gone("read again")

		// The events page: filtered by type and project, a page at a time.
		for i := range 26 {
			write(filepath.Join(ws("gamma"), "uploads", fmt.Sprintf("f%02d", i)), 10)
			op("DELETE", fmt.Sprintf("/v1/workspace/storage/projects/gamma/files/uploads/f%02d", i), "")
		}
		b.goTo("/events")
		if n := b.rows("#event-list"); n != 50 || !eval[bool](b, `!document.getElementById("events-more").hidden`) {
			t.Errorf("the events page shows %d rows (want a page of 50) or no Show older", n)
		}
		b.do(chromedp.Click(chromedp.ID("events-more")), chromedp.Poll[chromedp.Void](`document.querySelectorAll("#event-list tbody tr").length > 50`))
		b.do(chromedp.SetValue(chromedp.ID("ev-type"), "storage.evicted"), chromedp.SendKeys(chromedp.ID("ev-project"), "alpha"),
			chromedp.Click(chromedp.CSS(`#event-filters button[type="submit"]`)),
			chromedp.Poll[chromedp.Void](`[...document.querySelectorAll("#event-list tbody tr")].every(r => r.dataset.type === "storage.evicted") && document.querySelectorAll("#event-list tbody tr").length > 0`))
		if list := b.text("#event-list"); !strings.Contains(list, "projects/alpha/dist") || strings.Contains(list, "gamma") {
			t.Errorf("alpha's evictions: %q", list)
		}

		// The health page: every part, and the thresholds it judged by.
		b.goTo("/health")
		if parts := eval[string](b, `[...document.querySelectorAll("#health-parts tbody tr")].map(r => r.dataset.part).join(" ")`); parts != "disk cpu memory docker quota store" {
			t.Errorf("the health parts: %q", parts)
		}
		if th, quota := b.text("#health-thresholds"), b.text(`#health-parts tr[data-part="quota"]`); !strings.Contains(th, "warn below 15 %") || !strings.Contains(quota, "fallback") {
			t.Errorf("the thresholds %q / the quota backend %q", th, quota)
		}

		// At a phone's width, no view is wider than the screen.
		b.do(chromedp.EmulateViewport(375, 800))
		for _, view := range []string{"/", "/storage", "/storage/alpha", "/events", "/health"} {
			b.goTo(view)
			if w := eval[int](b, `document.documentElement.scrollWidth`); w > 375 {
				t.Errorf("at 375 px the view %s is %d px wide", view, w)
			}
			b.inert(view)
		}
	})
}
