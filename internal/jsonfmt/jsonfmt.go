// Package jsonfmt spells JSON values as encoding/json (and log/slog's
// JSONHandler, which defers to it) spells them, for the few hot answers
// and log lines that are written by hand instead of through reflection.
// It must never decide a format of its own: every function is held to the
// standard library's output by its test.
package jsonfmt

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// AppendFloat spells a float64 as encoding/json does: the shortest form
// that reads back the same, in exponent form only when very small or
// large. NaN and infinities, which encoding/json refuses, are null.
func AppendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	abs, format := math.Abs(f), byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 as e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// AppendPlainString quotes s when there is nothing in it to escape, which
// is when encoding/json (without HTML escaping) and slog's JSONHandler
// both write it as it is: printable ASCII but '"' and '\\', and valid
// UTF-8 but the two line separators both escape. Otherwise it returns b
// unchanged and false, and the caller lets the standard library spell s:
// escaping is never this package's to get wrong.
func AppendPlainString(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 || r == '\u2028' || r == '\u2029' {
				return b, false
			}
			i += n
			continue
		}
		if c < 0x20 || c == '"' || c == '\\' || c == 0x7f {
			return b, false
		}
		i++
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

// AppendString quotes s as encoding/json's Encoder does with
// SetEscapeHTML(false): '"', '\\' and control characters escaped (\b, \f,
// \n, \r and \t short, the rest as \u00XX), invalid UTF-8 as \ufffd, and
// U+2028 and U+2029 escaped for JavaScript's sake.
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += n
			continue
		}
		i += n
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
