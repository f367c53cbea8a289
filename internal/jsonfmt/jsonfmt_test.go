package jsonfmt

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestAppendFloatIsEncodingJSON(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 0.5, 1e-6, 9.99e-7, 1.5e-9, 1e-10, 123456.789, 1e20, 1e21, 1.5e300, -2.5e-8,
		0.000123456, 3.14159, math.SmallestNonzeroFloat64, math.MaxFloat64} {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendFloat(nil, f); string(got) != string(want) {
			t.Errorf("AppendFloat(%v) = %s, encoding/json %s", f, got, want)
		}
	}
	if got := string(AppendFloat(nil, math.NaN())); got != "null" {
		t.Errorf("NaN: %s, want null", got)
	}
}

func TestAppendPlainString(t *testing.T) {
	for _, c := range []struct {
		s     string
		plain bool
	}{
		{"", true}, {"omni", true}, {"a<b>&c", true}, {"résumé 日本", true},
		{`a"b`, false}, {`a\b`, false}, {"a\nb", false}, {"a\tb", false}, {"\x00", false}, {"a\x7f", false},
		{"a\xffb", false}, {"a\u2028b", false}, {"a\u2029b", false},
	} {
		got, ok := AppendPlainString([]byte("x"), c.s)
		if ok != c.plain {
			t.Errorf("%q: plain %v, want %v", c.s, ok, c.plain)
			continue
		}
		if !ok {
			if string(got) != "x" {
				t.Errorf("%q: refused, but b became %q", c.s, got)
			}
			continue
		}
		// Written as it is is what encoding/json writes without HTML escaping.
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.Encode(c.s)
		if string(got) != "x"+strings.TrimSuffix(want.String(), "\n") {
			t.Errorf("%q: wrote %s, encoding/json %s", c.s, got, want.String())
		}
	}
}

// encodingJSON is s as encoding/json's Encoder writes it without HTML escaping.
func encodingJSON(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func TestAppendStringIsEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "omni", `project "omni": ok (1.2 GiB of 50.0 GiB)`, `a\b`, "a<b>&c", "résumé 日本",
		"\b\f\n\r\t\x00\x01\x1f\x7f", "a\xffb\xc3", "\u2028\u2029", "\xed\xa0\x80 (a surrogate)", "tail\\"} {
		if got, want := string(AppendString([]byte("x"), s)), "x"+encodingJSON(s); got != want {
			t.Errorf("AppendString(%q) = %s, encoding/json %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add(`project "omni" workspace: over the soft disk limit`)
	f.Add("\x00\u2028\xff")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(AppendString(nil, s)), encodingJSON(s); got != want {
			t.Fatalf("AppendString(%q) = %s, encoding/json %s", s, got, want)
		}
	})
}
