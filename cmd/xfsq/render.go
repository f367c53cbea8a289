package main

// The CLI's text output: how each result reads for a person. Every name a
// tenant controls passes through safe (or line) here, so that none reaches
// the terminal raw (docs/design/README.md#output-conventions); JSON escapes on its own and is untouched.

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/xfsq/xfsq/internal/safetext"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/units"
)

// safe escapes a tenant-controlled name; line a message quoting one.
func safe(s string) string { return safetext.Name(s) }
func line(s string) string { return safetext.Line(s) }

// timeLayout is how every text output prints a time: local, with its zone.
const timeLayout = "2006-01-02 15:04:05 MST"

func when(t time.Time) string { return t.Local().Format(timeLayout) }

// plural is "1 entry", "2 entries".
func plural[N int | uint64 | int64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// progressLine is the one line a long walk keeps rewriting on stderr. It is
// cleared before anything else is printed (see env.print), so that output
// never lands beside a half-written count.
type progressLine struct {
	w     io.Writer
	mu    sync.Mutex
	shown bool
}

func (p *progressLine) show(text string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, "\r\033[K"+text)
	p.shown = true
}

func (p *progressLine) clear() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// watched reports whether a person watches: stdout and stderr on a
// terminal, no --json. Only then is there a progress line.
func (e env) watched() bool { return !e.json() && isTerminal(os.Stdout) && isTerminal(os.Stderr) }

// walkProgress is the progress line's text for a walk of one tree.
func walkProgress(p sandbox.TreeProgress) string {
	rate := float64(p.Files) / max(p.Elapsed.Seconds(), 0.001)
	s := fmt.Sprintf("  %s %s: %s, %s, %.0f files/s", safe(p.Project), p.Area, plural(p.Files, "file", "files"), units.FormatIEC(p.Bytes), rate)
	if pct := p.Percent(); pct >= 0 {
		s += fmt.Sprintf(", %.0f%% of the kernel's %d inodes", pct, p.KernelInodes)
	}
	return s
}

// useColour: on a terminal only, never with NO_COLOR (no-color.org: any
// value but empty) or a dumb terminal.
func useColour(f *os.File) bool {
	return os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb" && isTerminal(f)
}

func paint(on bool, code, s string) string {
	if !on {
		return s
	}
	return "\033[" + code + "m" + s + "\033[0m"
}
