package trend

import (
	"testing"
	"time"
)

// history makes hourly points ending at now from f(hours before now).
func history(now time.Time, hours int, f func(h float64) float64) []Point {
	var out []Point
	for h := hours; h >= 0; h-- {
		out = append(out, Point{At: now.Add(-time.Duration(h) * time.Hour), Bytes: uint64(f(float64(h)))})
	}
	return out
}

// TestFullIn holds the estimate to histories whose answer is known.
func TestFullIn(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const gib = 1 << 30
	hours := func(d time.Duration) *time.Duration { return &d }
	for _, c := range []struct {
		name   string
		points []Point
		limit  uint64
		want   *time.Duration // nil: not filling
		within time.Duration  // how close the estimate must be
	}{
		// 1 GiB an hour, 26 GiB now: 24 GiB left of 50 GiB is 24 h.
		{"linear growth", history(now, 24, func(h float64) float64 { return 26*gib - h*gib }), 50 * gib, hours(24 * time.Hour), time.Minute},
		{"flat", history(now, 24, func(float64) float64 { return 10 * gib }), 50 * gib, nil, 0},
		{"shrinking", history(now, 24, func(h float64) float64 { return 10*gib + h*gib/4 }), 50 * gib, nil, 0},
		// Writes 2 GiB an hour for 5 h, then cleans it all, all day: no
		// trend, however steep each ramp (the last two points say 20 h).
		{"sawtooth write-then-clean", history(now, 47, func(h float64) float64 {
			return 10*gib + float64(5-int(h)%6)*2*gib
		}), 50 * gib, nil, 0},
		{"sawtooth, now just cleaned", history(now, 47, func(h float64) float64 {
			return 10*gib + float64((int(h)+3)%6)*2*gib
		}), 50 * gib, nil, 0},
		{"sawtooth, now mid-ramp", history(now, 47, func(h float64) float64 {
			return 10*gib + float64(5-int(h+2)%6)*2*gib
		}), 50 * gib, nil, 0},
		// The same cycles rising 0.5 GiB an hour: full when a peak reaches
		// the limit, not a trough. The peak now is 40 GiB, 5 GiB (half the
		// swing) above the trend: (50−40)/0.5 = 20 h. The cycles tilt the
		// fitted line by a few percent of the swing, which makes the
		// estimate early (16.5 h here): an alert early rather than late.
		{"sawtooth rising", history(now, 47, func(h float64) float64 {
			return 30*gib + float64(5-int(h)%6)*2*gib - h*gib/2
		}), 50 * gib, hours(18 * time.Hour), 2 * time.Hour},
		{"too few points", history(now, 2, func(h float64) float64 { return 10*gib - h*gib/8 }), 50 * gib, nil, 0},
		{"too short a span", []Point{{now.Add(-3 * time.Hour), 1}, {now.Add(-2 * time.Hour), 2}, {now.Add(-time.Hour), 3}, {now, 4}}, 50 * gib, nil, 0},
		{"at the limit", history(now, 24, func(h float64) float64 { return 50*gib - h*gib/2 }), 50 * gib, hours(0), 0},
		{"no limit", history(now, 24, func(h float64) float64 { return 26*gib - h*gib }), 0, nil, 0},
		// Points older than the window are left out: a fill that stopped
		// two days ago is not a fill now.
		{"old growth, flat since", history(now, 96, func(h float64) float64 { return 10*gib + (96-max(h, 49))*gib/8 }), 50 * gib, nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := FullIn(c.points, c.limit, now)
			switch {
			case c.want == nil && got.FullIn != nil:
				t.Errorf("full in %s (slope %.0f B/s), want not filling", *got.FullIn, got.BytesPerSecond)
			case c.want == nil && got.Why == "":
				t.Errorf("not filling without saying why")
			case c.want != nil && got.FullIn == nil:
				t.Errorf("not filling (%s), want full in %s", got.Why, *c.want)
			case c.want != nil && (*got.FullIn-*c.want).Abs() > c.within:
				t.Errorf("full in %s, want %s ± %s", *got.FullIn, *c.want, c.within)
			}
		})
	}
}
