package quota_test

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/xfsq/xfsq/quota"
)

func TestInstant(t *testing.T) {
	at := time.Date(2026, 12, 1, 20, 15, 30, 123456789, time.FixedZone("CET", 3600))
	cases := []struct {
		name string
		in   quota.Instant
		want time.Time // in UTC; zero for none
	}{
		{"none", quota.InstantOf(time.Time{}), time.Time{}},
		{"the zero Instant", 0, time.Time{}},
		{"a moment keeps its nanoseconds, in UTC", quota.InstantOf(at), at.UTC()},
		{"kernel seconds", quota.InstantOfUnix(1796155200), time.Unix(1796155200, 0).UTC()},
		{"a timer of 0 is none", quota.InstantOfUnix(0), time.Time{}},
		// A big-time XFS timer (40 bits, year 36812) is past what
		// nanoseconds hold: clamped to their last second, not wrapped
		// into the past (which would read as a grace already over).
		{"beyond 2262 clamps", quota.InstantOfUnix(1 << 40), time.Unix(math.MaxInt64/int64(time.Second), 0).UTC()},
		{"before 1678 clamps", quota.InstantOfUnix(-1 << 40), time.Unix(-math.MaxInt64/int64(time.Second), 0).UTC()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.in.Time()
			if !got.Equal(c.want) || got.Location() != time.UTC && !got.IsZero() {
				t.Fatalf("Time() = %v, want %v", got, c.want)
			}
			if c.in.IsZero() != c.want.IsZero() {
				t.Fatalf("IsZero() = %v for %v", c.in.IsZero(), c.want)
			}
		})
	}
}

func TestInstantJSON(t *testing.T) {
	at := time.Date(2026, 12, 1, 20, 15, 30, 5, time.UTC)
	b, err := json.Marshal(quota.Usage{Bytes: 1, BytesGraceEnds: quota.InstantOf(at)})
	if err != nil {
		t.Fatal(err)
	}
	// As time.Time wrote it; the unset grace end is left out (omitzero).
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"used_bytes": 1.0, "used_inodes": 0.0, "bytes_grace_ends": "2026-12-01T20:15:30.000000005Z"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Usage as JSON: %s, want %v", b, want)
	}
}

// TestQuotaHoldsNoPointer: an enumeration of 1,000 IDs allocates one
// result the garbage collector never has to scan; a time.Time (or any
// pointer) creeping back into Quota would undo that.
func TestQuotaHoldsNoPointer(t *testing.T) {
	var walk func(reflect.Type) bool
	walk = func(ty reflect.Type) bool {
		switch ty.Kind() {
		case reflect.Struct:
			for i := range ty.NumField() {
				if !walk(ty.Field(i).Type) {
					t.Errorf("quota.Quota: field %s (%s) holds a pointer", ty.Field(i).Name, ty.Field(i).Type)
					return false
				}
			}
			return true
		case reflect.Array:
			return walk(ty.Elem())
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			return true
		}
		return false
	}
	walk(reflect.TypeFor[quota.Quota]())
}
