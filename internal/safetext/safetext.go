// Package safetext makes tenant-controlled text safe to print on an
// operator's terminal. A tenant names every file in its tree, so a name can
// hold escape sequences (clear the screen, retitle the window, fake a line
// of output), newlines, bidirectional overrides or bytes that are not UTF-8.
// Every text output of a shell passes such names through Name (or a line
// holding them through Line) so that none reaches a terminal raw, as ls
// quotes them. It owns no I/O and must never be applied to JSON, which
// escapes on its own.
package safetext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Name is s with every byte a terminal could act on written as a visible
// escape: \n \t \r \e and \xHH for control bytes and invalid UTF-8,
// \u{HHHH} for Unicode format characters (bidi overrides, zero-width
// marks), and a backslash doubled so that an escape is never ambiguous with
// a name that spells one. A name of ordinary printable characters is
// returned as it is.
func Name(s string) string { return escape(s, true) }

// Line is s with its control bytes, invalid UTF-8 and format characters
// escaped as Name does, but backslashes kept: for a message or a reason
// that quotes a tenant's name among words of xfsq's own.
func Line(s string) string { return escape(s, false) }

func escape(s string, backslash bool) string {
	if !needs(s, backslash) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\' && backslash:
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == 0x1b:
			b.WriteString(`\e`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u{%04x}`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func needs(s string, backslash bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f || (backslash && c == '\\') {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size <= 1) || unsafeRune(r) {
			return true
		}
		i += size
	}
	return false
}

// unsafeRune: C1 controls (a terminal may act on U+009B as on ESC [),
// format characters (U+202E reverses what follows), and line and paragraph
// separators.
func unsafeRune(r rune) bool {
	return (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Cf, r) || r == 0x2028 || r == 0x2029
}
