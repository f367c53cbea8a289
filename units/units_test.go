package units

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	cases := []struct {
		in   string
		want uint64
		err  string
	}{
		{"1048576", 1 << 20, ""},
		{"0", 0, ""},
		{"512k", 512 << 10, ""},
		{"512K", 512 << 10, ""},
		{"10m", 10 << 20, ""},
		{"5g", 5 << 30, ""},
		{"1t", 1 << 40, ""},
		{"10KiB", 10 << 10, ""},
		{"10MiB", 10 << 20, ""},
		{"50GiB", 50 << 30, ""},
		{"2TiB", 2 << 40, ""},
		{"10KB", 10_000, ""},
		{"10MB", 10_000_000, ""},
		{"10GB", 10_000_000_000, ""},
		{"1TB", 1_000_000_000_000, ""},
		{" 7 GiB ", 7 << 30, ""},
		{"", 0, "not a size"},
		{"1.5g", 0, "not a size"},
		{"-1", 0, "not a size"},
		{"10x", 0, "not a size"},
		{"g", 0, "not a size"},
		{"GiB10", 0, "not a size"},
		{"9999999999t", 0, "too large"},
		{"18446744073709551615", 0, "too large"},
	}
	for _, c := range cases {
		got, err := ParseSize(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseSize(%q) = %d, %v; want error containing %q", c.in, got, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ParseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	if _, err := ParseSize("lots"); err == nil || !strings.Contains(err.Error(), "KiB/MiB/GiB/TiB") {
		t.Errorf("error does not show the accepted forms: %v", err)
	}
}

func TestFormatIEC(t *testing.T) {
	cases := []struct {
		in   uint64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"},
		{50 << 30, "50.0 GiB"}, {1 << 40, "1.0 TiB"}, {1<<63 - 1, "8.0 EiB"},
	}
	for _, c := range cases {
		if got := FormatIEC(c.in); got != c.want {
			t.Errorf("FormatIEC(%d) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"45s", 45 * time.Second, true},
		{"30m", 30 * time.Minute, true},
		{"24h", 24 * time.Hour, true},
		{"7d", 7 * 24 * time.Hour, true},
		{"2w", 14 * 24 * time.Hour, true},
		{"1h30m", 90 * time.Minute, true},
		{"0s", 0, true},
		{"", 0, false}, {"d", 0, false}, {"-1h", 0, false}, {"1.5d", 0, false}, {"seven days", 0, false},
		// Past int64 nanoseconds: once wrapped round to minutes.
		{"213504d", 0, false}, {"15251w", 0, false}, {"18446744073709551615d", 0, false}, {"3000000h", 0, false},
		{"106751d", 106751 * 24 * time.Hour, true},
	}
	for _, c := range cases {
		got, err := ParseDuration(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
	for _, d := range []time.Duration{0, 45 * time.Second, 90 * time.Minute, 24 * time.Hour, 14 * 24 * time.Hour} {
		if back, err := ParseDuration(FormatDuration(d)); err != nil || back != d {
			t.Errorf("FormatDuration(%v) = %q does not parse back: %v, %v", d, FormatDuration(d), back, err)
		}
	}
}

func TestParseCount(t *testing.T) {
	if n, err := ParseCount("100000"); err != nil || n != 100000 {
		t.Errorf("ParseCount(100000) = %d, %v", n, err)
	}
	for _, bad := range []string{"", "10k", "-3", "1e6"} {
		if _, err := ParseCount(bad); err == nil {
			t.Errorf("ParseCount(%q) accepted", bad)
		}
	}
}

// Any input either parses to a size whose byte count reads back the same,
// or is refused with a message about sizes — never a panic.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"1048576", "512k", "10GiB", "10GB", "", "1.5g", "99999999999999t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			if !strings.Contains(err.Error(), "size") && !strings.Contains(err.Error(), "too large") {
				t.Fatalf("unhelpful error for %q: %v", s, err)
			}
			return
		}
		if n > 1<<63-1 {
			t.Fatalf("ParseSize(%q) = %d overflows int64", s, n)
		}
		// The exact byte count must always read back as the same size.
		if back, err := ParseSize(strconv.FormatUint(n, 10)); err != nil || back != n {
			t.Fatalf("ParseSize(%q) = %d, but its byte count reads back as %d, %v", s, n, back, err)
		}
		_ = FormatIEC(n)
	})
}

func TestFormatDurationDropsZeroParts(t *testing.T) {
	for d, want := range map[time.Duration]string{
		2 * time.Hour: "2h", 90 * time.Minute: "1h30m", 10 * time.Minute: "10m", 45 * time.Second: "45s",
		time.Hour + time.Second: "1h0m1s", 1500 * time.Millisecond: "1.5s", 48 * time.Hour: "2d", 14 * 24 * time.Hour: "2w",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		} else if back, err := ParseDuration(got); err != nil || back != d {
			t.Errorf("ParseDuration(%q) = %v, %v, want %v", got, back, err, d)
		}
	}
}
