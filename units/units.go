// Package units parses and prints the sizes, counts and durations that
// operators type: flags, settings, environment variables. It must never
// guess: input it cannot read exactly is an error that shows the accepted forms.
package units

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// SizeForms lists the accepted size forms, for error messages and --help.
const SizeForms = "a byte count (1048576), k/m/g/t for powers of 1024 as xfs_quota takes them (512k, 10m, 5g, 1t), " +
	"KiB/MiB/GiB/TiB (powers of 1024) or KB/MB/GB/TB (powers of 1000)"

var sizeSuffixes = []struct {
	suffix string
	mult   uint64
}{
	// Longest first, so "kib" is not read as "k" followed by junk.
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40},
}

// ParseSize reads a byte size such as "10GiB", "5g" or "1048576".
func ParseSize(s string) (uint64, error) {
	orig := s
	s = strings.ToLower(strings.TrimSpace(s))
	mult := uint64(1)
	for _, suf := range sizeSuffixes {
		if strings.HasSuffix(s, suf.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, suf.suffix)), suf.mult
			break
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size: use %s", orig, SizeForms)
	}
	hi, v := bits.Mul64(n, mult)
	if hi != 0 || v > math.MaxInt64 {
		return 0, fmt.Errorf("%q is too large (at most 8 EiB)", orig)
	}
	return v, nil
}

// ParseCount reads a whole number of things, e.g. an inode limit.
func ParseCount(s string) (uint64, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil || n > math.MaxInt64 {
		return 0, fmt.Errorf("%q is not a count: use a whole number such as 100000", s)
	}
	return n, nil
}

var iecUnits = []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}

// FormatIEC prints bytes with one decimal in powers of 1024: "50.0 GiB".
func FormatIEC(n uint64) string {
	if n < 1024 {
		return strconv.FormatUint(n, 10) + " B"
	}
	v, unit := float64(n), 0
	for v >= 1024 && unit < len(iecUnits)-1 {
		v /= 1024
		unit++
	}
	return fmt.Sprintf("%.1f %s", v, iecUnits[unit])
}

// DurationForms lists the accepted duration forms.
const DurationForms = "a whole number with s, m, h, d (days) or w (weeks), e.g. 45s, 30m, 24h, 7d, 2w, or a Go duration such as 1h30m"

// ParseDuration reads "7d", "2w", "24h", "1h30m"; it refuses negatives.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	var d time.Duration
	var err error
	if unit := map[byte]time.Duration{'d': 24 * time.Hour, 'w': 7 * 24 * time.Hour}[lastByte(t)]; unit != 0 {
		var n uint64
		n, err = strconv.ParseUint(t[:len(t)-1], 10, 64)
		// A product past int64 wraps: 213504d was once 25 minutes, and a
		// busy_grace that short lets a sweep delete a run's live scratch.
		if err == nil && n > uint64(math.MaxInt64/unit) {
			return 0, fmt.Errorf("%q is too long (at most %dd)", s, math.MaxInt64/(24*time.Hour))
		}
		d = time.Duration(n) * unit
	} else {
		d, err = time.ParseDuration(t) // refuses overflow itself
	}
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration: use %s", s, DurationForms)
	}
	return d, nil
}

// FormatDuration prints a duration in the largest whole unit ParseDuration reads.
func FormatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d%(7*24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(7*24*time.Hour)), 10) + "w"
	case d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	// Go's "2h0m0s" is read back alike but printed beside "1d" it reads as
	// another unit system: drop the zero parts, "2h", "1h30m", "10m".
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func lastByte(s string) byte {
	if s == "" {
		return 0
	}
	return s[len(s)-1]
}
