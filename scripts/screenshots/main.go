// Command screenshots takes the README's pictures from a running xfsq:
// the dashboard of `xfsq serve` in headless Chromium, and a terminal's
// capture of `xfsq report` (its ANSI colours drawn as a terminal would).
// scripts/screenshots.sh sets up the root and the server and runs it.
//
//	go run ./scripts/screenshots -url http://127.0.0.1:PORT -token T -report report.ansi -out docs/screenshots
package main

import (
	"context"
	"flag"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

func main() {
	url := flag.String("url", "", "the dashboard's address (xfsq serve)")
	token := flag.String("token", "", "a reader's token")
	report := flag.String("report", "", "a file holding `xfsq report` as a terminal received it (ANSI colours)")
	out := flag.String("out", "docs/screenshots", "where the PNGs go")
	flag.Parse()
	if *url == "" || *token == "" || *report == "" {
		fmt.Fprintln(os.Stderr, "screenshots: -url, -token and -report are needed")
		os.Exit(2)
	}
	if err := run(*url, *token, *report, *out); err != nil {
		fmt.Fprintln(os.Stderr, "screenshots:", err)
		os.Exit(1)
	}
}

func run(url, token, reportFile, out string) error {
	path, err := exec.LookPath("chromium")
	if err != nil {
		return fmt.Errorf("no Chromium: apt-get install chromium")
	}
	// The options of the dashboard's browser tests (server/dashboard_test.go).
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("hide-scrollbars", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	browser, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(browser); err != nil {
		return fmt.Errorf("start Chromium: %w", err)
	}
	ctx, cancel := context.WithTimeout(browser, time.Minute)
	defer cancel()

	err = chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 860),
		chromedp.Navigate(url+"/"),
		chromedp.WaitVisible(chromedp.ID("login")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.CSS(`#login button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.ID("overview")),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="/"]`)),
		chromedp.WaitReady(chromedp.CSS(`#server-facts dt`)))
	if err != nil {
		return fmt.Errorf("the dashboard: %w", err)
	}
	if err := shoot(ctx, chromedp.FullScreenshot(100), filepath.Join(out, "dashboard.png")); err != nil {
		return err
	}
	if err := views(ctx, out); err != nil {
		return err
	}

	ansi, err := os.ReadFile(reportFile)
	if err != nil {
		return err
	}
	page := filepath.Join(os.TempDir(), fmt.Sprintf("xfsq-report-%d.html", os.Getpid()))
	if err := os.WriteFile(page, []byte(terminalPage(string(ansi))), 0o600); err != nil {
		return err
	}
	defer os.Remove(page)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1400, 400), chromedp.Navigate("file://"+page),
		chromedp.WaitVisible(chromedp.ID("terminal"))); err != nil {
		return fmt.Errorf("the terminal page: %w", err)
	}
	return shoot(ctx, chromedp.Screenshot(chromedp.ID("terminal")), filepath.Join(out, "report.png"))
}

// dashboardViews are the dashboard's other views, each shot whole at a
// desktop's width, and the projects table at a phone's too.
var dashboardViews = []struct{ fragment, file string }{
	{"/storage", "dashboard-projects.png"},
	{"/storage/omni", "dashboard-project.png"},
	{"/events", "dashboard-events.png"},
	{"/health", "dashboard-health.png"},
	{"/hosts", "dashboard-hosts.png"},
	{"/hosts/builder-02", "dashboard-host.png"},
}

func views(ctx context.Context, out string) error {
	goTo := func(fragment string) error {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`delete document.body.dataset.ready, location.hash = `+strconv.Quote(fragment)+`, true`)); err != nil {
			return fmt.Errorf("the view %s: %w", fragment, err)
		}
		if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS(`body[data-ready=`+strconv.Quote(fragment)+`]`))); err != nil {
			return fmt.Errorf("the view %s: %w", fragment, err)
		}
		return nil
	}
	for _, v := range dashboardViews {
		if err := goTo(v.fragment); err != nil {
			return err
		}
		if err := shoot(ctx, chromedp.FullScreenshot(100), filepath.Join(out, v.file)); err != nil {
			return err
		}
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(375, 800)); err != nil {
		return err
	}
	if err := goTo("/"); err != nil {
		return err
	}
	if err := shoot(ctx, chromedp.FullScreenshot(100), filepath.Join(out, "dashboard-phone.png")); err != nil {
		return err
	}
	return chromedp.Do(ctx, chromedp.EmulateViewport(1280, 860))
}

func shoot(ctx context.Context, a chromedp.Action[[]byte], file string) error {
	png, err := chromedp.Run(ctx, a)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if err := os.WriteFile(file, png, 0o644); err != nil {
		return err
	}
	fmt.Println("wrote", file)
	return nil
}

var sgr = regexp.MustCompile(`\x1b\[([0-9;]*)m`)

// terminalPage draws text with ANSI colour codes (SGR) as a dark terminal
// window: only the codes xfsq writes (bold, red, yellow, reset) are needed.
func terminalPage(ansi string) string {
	colours := map[string]string{"31": "#ff6b6b", "32": "#8ae234", "33": "#fce94f", "34": "#729fcf", "36": "#34e2e2"}
	var b strings.Builder
	open := 0
	last := 0
	for _, m := range sgr.FindAllStringSubmatchIndex(ansi, -1) {
		b.WriteString(html.EscapeString(ansi[last:m[0]]))
		last = m[1]
		for _, code := range strings.Split(ansi[m[2]:m[3]], ";") {
			switch {
			case code == "" || code == "0" || code == "39" || code == "22":
				for ; open > 0; open-- {
					b.WriteString("</span>")
				}
			case code == "1":
				b.WriteString(`<span style="font-weight:bold">`)
				open++
			case colours[code] != "":
				b.WriteString(`<span style="color:` + colours[code] + `">`)
				open++
			}
		}
	}
	b.WriteString(html.EscapeString(ansi[last:]))
	for ; open > 0; open-- {
		b.WriteString("</span>")
	}
	text := strings.ReplaceAll(b.String(), "\r", "")
	return `<!doctype html><html><head><meta charset="utf-8"><style>
body { margin: 0; background: #fff; }
#terminal { display: inline-block; margin: 12px; border-radius: 8px; background: #1e1e1e; box-shadow: 0 2px 8px #0004; }
#bar { height: 26px; border-radius: 8px 8px 0 0; background: #3a3a3a; padding-left: 12px; }
#bar i { display: inline-block; width: 12px; height: 12px; margin: 7px 6px 0 0; border-radius: 6px; background: #888; }
pre { margin: 0; padding: 12px 16px 16px; color: #e0e0e0; font: 14px/1.35 "DejaVu Sans Mono", monospace; }
</style></head><body><div id="terminal"><div id="bar"><i></i><i></i><i></i></div><pre>` + text + `</pre></div></body></html>`
}
