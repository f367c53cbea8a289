package server_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/internal/testsupport/prereq"
	"github.com/xfsq/xfsq/sandbox"
)

// The dashboard's files are served without a token (they hold no data),
// each with its type and a policy that runs the page's own script only,
// revalidated by ETag; the page is at / only, and nothing else is served
// from the embedded directory.
func TestDashboardFiles(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		ts := newServer(t, r)
		for path, ctype := range map[string]string{"/": "text/html", "/ui/app.js": "text/javascript", "/ui/app.css": "text/css"} {
			code, h, body := ts.raw(t, "GET", path, "", "")
			if code != 200 || !strings.HasPrefix(h.Get("Content-Type"), ctype) || body == "" {
				t.Errorf("GET %s: %d %q", path, code, h.Get("Content-Type"))
			}
			if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "default-src 'none'") ||
				!strings.Contains(csp, "frame-ancestors 'none'") || h.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("GET %s: policy %q, nosniff %q", path, csp, h.Get("X-Content-Type-Options"))
			}
			req, _ := http.NewRequest("GET", ts.URL+path, nil)
			req.Header.Set("If-None-Match", h.Get("ETag"))
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if h.Get("ETag") == "" || resp.StatusCode != http.StatusNotModified {
				t.Errorf("GET %s with its ETag %q: %d, want 304", path, h.Get("ETag"), resp.StatusCode)
			}
			// The transport asked with gzip: the 304 names the Vary of the
			// gzipped 200 (RFC 9110 §15.4.5).
			zipped, _ := getEncoded(t, ts, path, "gzip")
			if want := zipped.Header.Values("Vary"); zipped.Header.Get("Content-Encoding") != "gzip" || !slices.Equal(resp.Header.Values("Vary"), want) {
				t.Errorf("GET %s: the 304 varies on %q, the gzipped 200 (%q) on %q; want the same", path, resp.Header.Values("Vary"), zipped.Header.Get("Content-Encoding"), want)
			}
			// The gzipped and the plain body are two representations: one
			// strong tag for both would tell a cache or a range request
			// they are byte for byte the same (RFC 9110 §8.8.1). And the
			// plain one varies as the gzipped one does, or a shared cache
			// would hand it to every client.
			plain, _ := getEncoded(t, ts, path, "")
			if tag := plain.Header.Get("ETag"); !strings.HasPrefix(tag, `W/"`) || tag != zipped.Header.Get("ETag") {
				t.Errorf("GET %s: ETag %q plain, %q gzipped; want one weak tag", path, tag, zipped.Header.Get("ETag"))
			}
			if got, want := plain.Header.Values("Vary"), zipped.Header.Values("Vary"); plain.Header.Get("Content-Encoding") != "" || !slices.Equal(got, want) {
				t.Errorf("GET %s plain: varies on %q, the gzipped 200 on %q; want the same", path, got, want)
			}
		}
		for _, path := range []string{"/ui/index.html", "/ui/nothing.js", "/ui/..%2fdashboard.go", "/index.html"} {
			if code, _, _ := ts.raw(t, "GET", path, "", ""); code != 404 {
				t.Errorf("GET %s: %d, want 404", path, code)
			}
		}
	})
}

// chromium is the headless browser the dashboard's tests drive, or the
// test is skipped (failed under CI) naming the package to install.
func chromium(t testing.TB) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		prereq.Missing(t, "the dashboard's browser tests need Chromium: apt-get install chromium")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// browser drives one tab, failing the test on the first error, each step
// bounded so that a page that never draws fails rather than hangs.
type browser struct {
	t   testing.TB
	tab context.Context
}

func (b browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.tab, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatal(err)
	}
}

func (b browser) text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.tab, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("the text of %s: %v", sel, err)
	}
	return v
}

// goTo shows the view of a fragment and waits until it is drawn.
func (b browser) goTo(fragment string) {
	b.t.Helper()
	eval[bool](b, "location.hash = "+strconv.Quote(fragment)+", true")
	b.do(chromedp.WaitReady(chromedp.CSS(`body[data-ready=` + strconv.Quote(fragment) + `]`)))
	b.noError(fragment)
}

// noError fails the test when the page shows an error.
func (b browser) noError(view string) {
	b.t.Helper()
	if msg := eval[string](b, `document.getElementById("error").hidden ? "" : document.getElementById("error").textContent`); msg != "" {
		b.t.Fatalf("the view %s shows an error: %s", view, msg)
	}
}

func eval[T any](b browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.tab, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// The dashboard in a real browser, on a root with a project near its limit,
// one past it and one small, and a tenant's file named as markup:
// the overview shows the disk and the top projects with amber and red
// bars; the storage table lists every project; a project's page shows its
// tree with the hostile name as text (no element made of it, no script
// run), its largest files and its eviction history; a reader's dry run is
// refused as the API refuses it; an operator's dry run shows the plan and
// sweeping it deletes exactly that, journalled, and the history shows it.
func TestDashboardInABrowser(t *testing.T) {
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
		evil := `<img src=x onerror="window.pwned=1">.txt`
		write(filepath.Join(ws("alpha"), "data", evil), 880<<10)
		write(filepath.Join(ws("alpha"), "dist", "old.js"), 8<<10)
		old := time.Now().Add(-30 * 24 * time.Hour)
		os.Chtimes(filepath.Join(ws("alpha"), "dist", "old.js"), old, old)
		os.Chtimes(filepath.Join(ws("alpha"), "dist"), old, old)
		write(filepath.Join(ws("beta"), "big"), 1100<<10)
		write(filepath.Join(ws("gamma"), "small"), 4<<10)
		write(filepath.Join(ws("alpha"), "uploads", "gone.txt"), 4<<10)
		if _, err := r.Manager.Snapshot(r.Ctx, sandbox.SnapshotOptions{}); err != nil {
			t.Fatal(err)
		}
		ts := newServer(t, r)
		if code, _, body := ts.raw(t, "DELETE", "/v1/workspace/storage/projects/alpha/files/uploads/gone.txt", operatorToken, ""); code != 200 {
			t.Fatalf("remove a file for the history: %d %s", code, body)
		}

		tab, cancel := chromedp.NewContext(ctx)
		defer cancel()
		// The tab lives as long as the context of its first run: that one
		// has no timeout, each step after it has its own.
		if err := chromedp.Do(tab); err != nil {
			t.Fatal(err)
		}
		b := browser{t, tab}
		login := func(token string) {
			b.do(chromedp.Navigate(ts.URL + "/"))
			eval[bool](b, `sessionStorage.clear(), true`)
			// Another URL than the page's, so that the browser loads it
			// again: a change of the fragment alone is no navigation.
			b.do(chromedp.Navigate(ts.URL+"/?again"),
				chromedp.WaitVisible(chromedp.ID("login")),
				chromedp.SendKeys(chromedp.ID("token"), token),
				// Clicked as a person does (form.submit() fires no submit event).
				chromedp.Click(chromedp.CSS(`#login button[type="submit"]`)),
				chromedp.WaitVisible(chromedp.ID("overview")),
				chromedp.WaitReady(chromedp.CSS(`body[data-ready="/"]`)),
				chromedp.WaitReady(chromedp.CSS(`#server-facts dt`)))
		}

		login(readerToken)
		if disk := b.text("#disk-text"); !strings.Contains(disk, "used of") || !strings.Contains(disk, "free") {
			t.Errorf("the disk line: %q", disk)
		}
		top := b.text("#top")
		if rows := eval[int](b, `document.querySelectorAll("#top tbody tr").length`); rows != 3 || !strings.Contains(top, "alpha") || !strings.Contains(top, "1.0 MiB") {
			t.Errorf("the top projects (%d rows): %q", rows, top)
		}
		classes := eval[map[string]string](b, `Object.fromEntries([...document.querySelectorAll("#top tbody tr")].map(tr => [tr.dataset.project, tr.querySelector(".bar").className]))`)
		if classes["beta"] != "bar red" || classes["alpha"] != "bar amber" || classes["gamma"] != "bar" {
			t.Errorf("the quota bars: %v; want beta red (past its limit), alpha amber (over 80 %%), gamma plain", classes)
		}
		if facts := b.text("#server-facts"); !strings.Contains(facts, "status") || !strings.Contains(facts, "memory") {
			t.Errorf("the server widget: %q", facts)
		}

		b.goTo("/storage")
		table := b.text("#projects")
		if rows := eval[int](b, `document.querySelectorAll("#projects tbody tr").length`); rows != 3 || !strings.Contains(table, "gamma") || !strings.Contains(table, "1.0 MiB") {
			t.Errorf("the storage table (%d rows): %q", rows, table)
		}

		b.do(chromedp.Click(chromedp.CSS(`#projects tr[data-project="alpha"]`)),
			chromedp.WaitReady(chromedp.CSS(`body[data-ready="/storage/alpha"]`)))
		eval[bool](b, `document.querySelectorAll("#tree details").forEach(d => d.open = true), true`)
		if tree, files := b.text("#tree"), b.text("#top-files"); !strings.Contains(tree, "data") || !strings.Contains(files, evil) {
			t.Errorf("the tree and the largest files do not show the tenant's file by its name:\n%s\n%s", tree, files)
		}
		// Counts take the CLI's plural: data/ holds one file, the tree two
		// (the snapshot found three; uploads/gone.txt was removed since,
		// and the journal says so).
		if tree := b.text("#tree"); !strings.Contains(tree, ", 1 file, newest") || !strings.Contains(tree, ", 2 files, newest") || strings.Contains(tree, " 1 files") {
			t.Errorf("the tree's counts: %q; want 1 file and 2 files", tree)
		}
		if eval[bool](b, `window.pwned === 1 || document.querySelector("main img") !== null`) {
			t.Error("a file name became markup in the page (an element or a script from it)")
		}
		if history := b.text("#evictions"); !strings.Contains(history, "uploads/gone.txt") || !strings.Contains(history, "done") || !strings.Contains(history, "ops") ||
			strings.Count(history, "uploads/gone.txt") != 1 {
			t.Errorf("the eviction history (a deletion once, as it ended): %q", history)
		}
		b.do(chromedp.Click(chromedp.ID("dry-run")), chromedp.WaitReady(chromedp.CSS(`#sweep-result:not(:empty)`)))
		if refusal := b.text("#sweep-result"); !strings.Contains(refusal, "Refused") || !strings.Contains(refusal, "operator") {
			t.Errorf("a reader's dry run: %q; want the API's refusal", refusal)
		}

		// A reader limited to another project sees none of these, as the
		// API shows it none.
		login(limitedToken)
		if rows := eval[int](b, `document.querySelectorAll("#top tbody tr").length`); rows != 0 {
			t.Errorf("a reader limited to another project sees %d of these projects", rows)
		}
		b.goTo("/storage")
		if rows := eval[int](b, `document.querySelectorAll("#projects tbody tr").length`); rows != 0 {
			t.Errorf("a reader limited to another project lists %d of these projects", rows)
		}

		login(operatorToken)
		b.goTo("/storage/alpha")
		b.do(chromedp.Click(chromedp.ID("dry-run")),
			chromedp.WaitVisible(chromedp.ID("plan")))
		if summary, plan := b.text("#plan-summary"), b.text("#plan-entries"); !strings.Contains(summary, "1 entry,") || !strings.Contains(plan, "dist") {
			t.Errorf("the dry run: %q / %q; want the one old dist/ entry", summary, plan)
		}
		b.do(chromedp.Click(chromedp.ID("apply")), chromedp.WaitVisible(chromedp.ID("confirm")),
			chromedp.Click(chromedp.ID("confirm-apply")), chromedp.WaitReady(chromedp.CSS(`#sweep-result:not(:empty)`)))
		if result := b.text("#sweep-result"); !strings.Contains(result, "Swept: 1 entry deleted") {
			t.Errorf("the sweep: %q", result)
		}
		if _, err := os.Stat(filepath.Join(ws("alpha"), "dist")); !os.IsNotExist(err) {
			t.Errorf("the swept entry is still there: %v", err)
		}
		if _, err := os.Stat(filepath.Join(ws("alpha"), "data", evil)); err != nil {
			t.Errorf("a file the plan did not name went: %v", err)
		}
		if after := b.text("#evictions"); !strings.Contains(after, "dist") {
			t.Errorf("the eviction history after the sweep: %q", after)
		}

		// A long history comes a page at a time, older pages on asking,
		// each deletion once across pages; Refresh reads the view again.
		const removed = 30 // 60 records: more than a page of 50
		for i := range removed {
			write(filepath.Join(ws("gamma"), "uploads", fmt.Sprintf("f%02d", i)), 10)
			if code, _, body := ts.raw(t, "DELETE", fmt.Sprintf("/v1/workspace/storage/projects/gamma/files/uploads/f%02d", i), operatorToken, ""); code != 200 {
				t.Fatalf("remove f%02d: %d %s", i, code, body)
			}
		}
		b.goTo("/storage/gamma")
		rows := func() int { return eval[int](b, `document.querySelectorAll("#evictions tbody tr").length`) }
		more := func() bool { return eval[bool](b, `!document.getElementById("evictions-more").hidden`) }
		if n := rows(); n >= removed || !more() {
			t.Errorf("the first page shows %d of %d deletions, Show older shown %v; want part of them and the button", n, removed, more())
		}
		for clicks := 0; more() && clicks < 5; clicks++ {
			before := rows()
			b.do(chromedp.Click(chromedp.ID("evictions-more")),
				chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelectorAll("#evictions tbody tr").length > %d || document.getElementById("evictions-more").hidden`, before)))
		}
		history := b.text("#evictions")
		if n := rows(); n != removed || more() || strings.Count(history, "uploads/f07") != 1 || !strings.Contains(history, "uploads/f00") {
			t.Errorf("after the older pages: %d rows, Show older shown %v; want each of the %d deletions once:\n%s", n, more(), removed, history)
		}
		write(filepath.Join(ws("gamma"), "uploads", "late"), 10)
		if code, _, body := ts.raw(t, "DELETE", "/v1/workspace/storage/projects/gamma/files/uploads/late", operatorToken, ""); code != 200 {
			t.Fatalf("remove late: %d %s", code, body)
		}
		eval[bool](b, `delete document.body.dataset.ready, true`)
		b.do(chromedp.Click(chromedp.ID("refresh")), chromedp.WaitReady(chromedp.CSS(`body[data-ready="/storage/gamma"]`)))
		if h := b.text("#evictions"); !strings.Contains(h, "uploads/late") || !strings.Contains(b.text("#refreshed"), "as of") {
			t.Errorf("after Refresh the history lacks the newest deletion, or the time read is not shown: %q", h)
		}
	})
}
