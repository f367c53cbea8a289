// Package trend is the rule by which xfsq estimates when a tree (or the
// disk) will be full: a pure function of a history of usage, a limit and
// now (FullIn), with the reason when it gives no estimate. It reads
// nothing and imports nothing of xfsq: the core fits a tree's stored
// snapshots with it for Report, the read model a project's trees and the
// disk's passes.
package trend

import (
	"fmt"
	"math"
	"time"
)

// The rule by which "full in" is estimated (FullIn), in one place:
//
//   - the points are a tree's complete snapshots over the last
//     Window, and its usage read now (the kernel's count on XFS and
//     ext4); at least MinPoints of them spanning MinSpan;
//   - the trend is their least-squares line. It counts only when it rises
//     by more than twice its standard error: a tree that writes and cleans
//     in cycles (a build's scratch, a cache filled and swept) has a slope
//     of a few percent of its swing either way, which that test reads as
//     noise, where the last two points would read a ramp as a fill;
//   - what the tree reaches is the trend now plus the highest excursion
//     above it in the window (a cycle's peak), or the usage now if higher;
//     the estimate is when that reaches the limit at the trend's rate.
const (
	Window    = 48 * time.Hour
	MinPoints = 4
	MinSpan   = 6 * time.Hour
)

// Point is a tree's (or the disk's) usage at a time.
type Point struct {
	At    time.Time
	Bytes uint64
}

// Trend is what a history of usage says about where it goes.
type Trend struct {
	// BytesPerSecond is the fitted slope (0 when too few points).
	BytesPerSecond float64
	// FullIn is how long until the limit is reached at that rate: 0 when
	// it is already, nil when it is not filling (flat, shrinking, a trend
	// within noise), there is no limit, or too little history (Why says).
	FullIn *time.Duration
	Why    string
}

// FullIn estimates from points (any order; the window is counted back
// from now) when usage reaches limit (0: none), by the rule above. A pure
// function: the same history gives the same answer.
func FullIn(points []Point, limit uint64, now time.Time) Trend {
	var xs, ys []float64
	var first, last time.Time
	var latest Point
	for _, p := range points {
		if p.At.After(now) || now.Sub(p.At) > Window {
			continue
		}
		if first.IsZero() || p.At.Before(first) {
			first = p.At
		}
		if p.At.After(last) || last.IsZero() {
			last, latest = p.At, p
		}
		xs = append(xs, p.At.Sub(now).Seconds())
		ys = append(ys, float64(p.Bytes))
	}
	switch {
	case limit == 0:
		return Trend{Why: "no hard byte limit"}
	case len(xs) > 0 && latest.Bytes >= limit:
		return Trend{FullIn: new(time.Duration(0)), Why: "at its limit"}
	case len(xs) < MinPoints || last.Sub(first) < MinSpan:
		return Trend{Why: fmt.Sprintf("too little history: %s over %s, needs %d over %s",
			pointCount(len(xs)), last.Sub(first).Round(time.Minute), MinPoints, MinSpan)}
	}
	slope, intercept, se, peak := fit(xs, ys)
	t := Trend{BytesPerSecond: slope}
	if slope <= 0 || slope <= 2*se {
		t.Why = "not filling: no rise beyond the window's ups and downs"
		return t
	}
	reach := max(intercept+peak, float64(latest.Bytes)) // the fitted line at now (x = 0) plus the highest excursion
	if reach >= float64(limit) {
		t.FullIn = new(time.Duration(0))
		return t
	}
	secs := (float64(limit) - reach) / slope
	if secs > float64(math.MaxInt64/int64(time.Second)) {
		t.Why = "not filling within any time worth saying"
		return t
	}
	t.FullIn = new(time.Duration(secs * float64(time.Second)))
	return t
}

// fit is the least-squares line through (xs, ys), the standard error of
// its slope, and the largest residual above it (0 if none).
func fit(xs, ys []float64) (slope, intercept, se, peak float64) {
	n := float64(len(xs))
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx, my = mx/n, my/n
	var sxx, sxy float64
	for i := range xs {
		dx := xs[i] - mx
		sxx += dx * dx
		sxy += dx * (ys[i] - my)
	}
	if sxx == 0 {
		return 0, my, 0, 0
	}
	slope = sxy / sxx
	intercept = my - slope*mx
	var ss float64
	for i := range xs {
		r := ys[i] - (intercept + slope*xs[i])
		ss += r * r
		peak = max(peak, r)
	}
	se = math.Sqrt(ss/(n-2)) / math.Sqrt(sxx)
	return slope, intercept, se, peak
}

func pointCount(n int) string {
	if n == 1 {
		return "1 point"
	}
	return fmt.Sprintf("%d points", n)
}
