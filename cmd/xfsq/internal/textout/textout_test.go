package textout

import (
	"testing"
	"time"
)

// An age keeps the minutes past the hour below two days; a span does not;
// both go to days from two days on.
func TestAgesAndSpans(t *testing.T) {
	for _, c := range []struct {
		d          time.Duration
		age, short string
	}{
		{40 * time.Second, "40s", "40s"},
		{12*time.Minute + 30*time.Second, "12m", "12m"},
		{3*time.Hour + 5*time.Minute, "3h5m", "3h"},
		{47*time.Hour + 59*time.Minute, "47h59m", "47h"},
		{48 * time.Hour, "2d", "2d"},
		{100 * time.Hour, "4d", "4d"},
	} {
		if got := RoughAge(c.d); got != c.age {
			t.Errorf("RoughAge(%v) = %q, want %q", c.d, got, c.age)
		}
		if got := ShortDuration(c.d); got != c.short {
			t.Errorf("ShortDuration(%v) = %q, want %q", c.d, got, c.short)
		}
	}
}
