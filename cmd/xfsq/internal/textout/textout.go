// Package textout is how the CLI's results read for a person: escaped
// names, times, counts, sizes and ages, aligned tables, colour and the
// progress line a long walk rewrites. Every name a tenant controls passes
// through Safe (or Line) here, so that none reaches the terminal raw
// (docs/design/README.md#output-conventions); JSON escapes on its own and
// is untouched.
//
// It owns wording only: it never reads the root, the store or a backend,
// and never decides what to show (the commands choose, the library
// computes the figures).
package textout

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/safetext"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/units"
)

// Safe escapes a tenant-controlled name; Line a message quoting one.
func Safe(s string) string { return safetext.Name(s) }
func Line(s string) string { return safetext.Line(s) }

// TimeLayout is how every text output prints a time: local, with its zone.
const TimeLayout = "2006-01-02 15:04:05 MST"

// When is t as every text output prints a time.
func When(t time.Time) string { return t.Local().Format(TimeLayout) }

// Plural is "1 entry", "2 entries".
func Plural[N int | uint64 | int64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Table writes rows under header, aligned in columns two spaces apart.
func Table(w io.Writer, header string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

// Dash is n in format, or "-" for 0 (no limit).
func Dash(n uint64, format func(uint64) string) string {
	if n == 0 {
		return "-"
	}
	return format(n)
}

// Count is a count of files or inodes, in full.
func Count(n uint64) string { return fmt.Sprint(n) }

// Growth is a change in bytes with its sign: +4.0 KiB, -1.0 MiB; "-"
// when unknown.
func Growth(d *int64) string {
	switch {
	case d == nil:
		return "-"
	case *d < 0:
		return "-" + units.FormatIEC(uint64(-*d))
	}
	return "+" + units.FormatIEC(uint64(*d))
}

// RoughAge is an age as a person reads it: 40s, 12m, 3h5m, 4d.
func RoughAge(d time.Duration) string { return span(d, true) }

// ShortDuration is a span in its largest whole unit: 45s, 12m, 16h, 6d.
func ShortDuration(d time.Duration) string { return span(d, false) }

// span is d in seconds, minutes, hours (with the minutes past the hour
// when asked) or, from two days, days.
func span(d time.Duration, hourMinutes bool) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour && hourMinutes:
		return fmt.Sprintf("%dh%dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// FullIn says how long until a tree is full at its trend: "16h", "3d",
// "now", or "-" when it is not filling or too little is known.
func FullIn(secs *float64) string {
	switch {
	case secs == nil:
		return "-"
	case *secs <= 0:
		return "now"
	}
	return ShortDuration(time.Duration(*secs * float64(time.Second)))
}

// ProgressLine is the one line a long walk keeps rewriting on stderr. It is
// cleared before anything else is printed, so that output never lands
// beside a half-written count. A nil ProgressLine shows nothing.
type ProgressLine struct {
	w     io.Writer
	mu    sync.Mutex
	shown bool
}

// NewProgressLine is a progress line written to w.
func NewProgressLine(w io.Writer) *ProgressLine { return &ProgressLine{w: w} }

// Show replaces the line with text.
func (p *ProgressLine) Show(text string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, "\r\033[K"+text)
	p.shown = true
}

// Clear erases the line, if one is shown.
func (p *ProgressLine) Clear() {
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

// WalkProgress is the progress line's text for a walk of one tree.
func WalkProgress(p sandbox.TreeProgress) string {
	rate := float64(p.Files) / max(p.Elapsed.Seconds(), 0.001)
	s := fmt.Sprintf("  %s %s: %s, %s, %.0f files/s", Safe(p.Project), p.Area, Plural(p.Files, "file", "files"), units.FormatIEC(p.Bytes), rate)
	if pct := p.Percent(); pct >= 0 {
		s += fmt.Sprintf(", %.0f%% of the kernel's %d inodes", pct, p.KernelInodes)
	}
	return s
}

// IsTerminal reports whether f is a terminal (for progress lines).
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// UseColour: on a terminal only, never with NO_COLOR (no-color.org: any
// value but empty) or a dumb terminal.
func UseColour(f *os.File) bool {
	return os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb" && IsTerminal(f)
}

// Paint wraps s in the SGR colour code when on.
func Paint(on bool, code, s string) string {
	if !on {
		return s
	}
	return "\033[" + code + "m" + s + "\033[0m"
}
