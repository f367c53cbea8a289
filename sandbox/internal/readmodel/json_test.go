package readmodel

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// AppendAdmissionJSON must write exactly what encoding/json writes (the server's
// writeJSON: an Encoder without HTML escaping). Every field of Admission,
// Backend and TreeStatus is filled by reflection — set and unset, strings
// that need escaping, extreme numbers and times — so a field added to the
// types and not to AppendAdmissionJSON fails here.
func TestAppendJSONIsEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	strs := []string{"", "omni", `quo"te`, `back\slash`, "new\nline", "tab\t", "\x01ctl", "<html>&", "ünï", "\u2028", "bad\xffutf8", "emoji 🚀"}
	floats := []float64{0, 1, -1, 0.5, 1e-7, 123456.789, 1e21, 1e20, 5e-324, math.MaxFloat64, 99.99999999, 1.0 / 3}
	times := []time.Time{time.Unix(0, 0).UTC(), time.Date(2026, 12, 1, 15, 4, 5, 123456789, time.UTC),
		time.Date(2026, 12, 1, 15, 4, 5, 0, time.FixedZone("x", 3600)), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			v.SetString(strs[rng.IntN(len(strs))])
		case reflect.Bool:
			v.SetBool(rng.IntN(2) == 0)
		case reflect.Uint64, reflect.Uint32, reflect.Uint:
			x := []uint64{0, 1, 4096, math.MaxUint64, rng.Uint64()}[rng.IntN(5)]
			if bits := v.Type().Bits(); bits < 64 {
				x &= 1<<bits - 1
			}
			v.SetUint(x)
		case reflect.Int64, reflect.Int:
			v.SetInt([]int64{0, -1, 1 << 40, math.MinInt64, math.MaxInt64}[rng.IntN(5)])
		case reflect.Float64:
			v.SetFloat(floats[rng.IntN(len(floats))])
		case reflect.Pointer:
			if rng.IntN(3) == 0 {
				v.SetZero()
				return
			}
			v.Set(reflect.New(v.Type().Elem()))
			fill(v.Elem())
		case reflect.Slice:
			if rng.IntN(5) == 0 {
				v.SetZero()
				return
			}
			v.Set(reflect.MakeSlice(v.Type(), rng.IntN(4), 4))
			for i := range v.Len() {
				fill(v.Index(i))
			}
		case reflect.Struct:
			if v.Type() == reflect.TypeFor[time.Time]() {
				v.Set(reflect.ValueOf(times[rng.IntN(len(times))]))
				return
			}
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					fill(v.Field(i))
				}
			}
		default:
			t.Fatalf("no filler for %s", v.Type())
		}
	}
	for i := range 2000 {
		var a Admission
		fill(reflect.ValueOf(&a).Elem())
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(a); err != nil {
			continue // a year past 9999: encoding/json refuses it, and so does the server
		}
		if got := AppendAdmissionJSON(nil, a); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("case %d:\n got %s\nwant %s", i, got, want.Bytes())
		}
		// The same with every tree carrying the answer's backend (its
		// kept JSON reused, as a root's answers do), and with some whose
		// fields differ from the one kept.
		for j := range a.Trees {
			a.Trees[j].Backend = a.Backend
			if j%2 == 1 {
				a.Trees[j].Backend.Reason += " (changed)"
				a.Trees[j].Backend.Enforced = !a.Trees[j].Backend.Enforced
			}
		}
		want.Reset()
		if err := enc.Encode(a); err != nil {
			t.Fatal(err)
		}
		if got := AppendAdmissionJSON(nil, a); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("case %d, backends kept:\n got %s\nwant %s", i, got, want.Bytes())
		}
	}
}
