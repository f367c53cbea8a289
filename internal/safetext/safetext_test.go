package safetext

import (
	"strings"
	"testing"
)

func TestName(t *testing.T) {
	for _, c := range []struct{ in, name, line string }{
		{"plain.txt", "plain.txt", "plain.txt"},
		{"ünïcode 名前", "ünïcode 名前", "ünïcode 名前"},
		{"evil\x1b[2J\nline", `evil\e[2J\nline`, `evil\e[2J\nline`},
		{"tab\there\r", `tab\there\r`, `tab\there\r`},
		{"bell\x07del\x7f", `bell\x07del\x7f`, `bell\x07del\x7f`},
		{"bad\xff\xfeutf8", `bad\xff\xfeutf8`, `bad\xff\xfeutf8`},
		{"csi\u009b2J", `csi\u{009b}2J`, `csi\u{009b}2J`},
		{"txt.\u202eexe", `txt.\u{202e}exe`, `txt.\u{202e}exe`},
		{`back\slash`, `back\\slash`, `back\slash`},
		{`spelt\e`, `spelt\\e`, `spelt\e`},
	} {
		if got := Name(c.in); got != c.name {
			t.Errorf("Name(%q) = %q, want %q", c.in, got, c.name)
		}
		if got := Line(c.in); got != c.line {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.line)
		}
	}
}

func FuzzName(f *testing.F) {
	f.Add("evil\x1b[2J\n\xff")
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{Name(s), Line(s)} {
			for _, r := range out {
				if r < 0x20 || r == 0x7f || unsafeRune(r) || r == 0xfffd && !strings.Contains(s, "\ufffd") {
					t.Fatalf("%q → %q keeps %U", s, out, r)
				}
			}
		}
	})
}
