package gitindex

import "testing"

// Config values read as git reads them: comments only outside quotes.
func TestConfigString(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{" ../r ", "../r"},
		{` "../../r#x"`, "../../r#x"},
		{` "  .." # c`, "  .."}, // quoted blanks stay, also before a comment (an attack hid ../../t so)
		{" ../r # a comment", "../r"},
		{" ../r;x", "../r"},
		{` "a b" c`, "a b c"},
		{` a\"b`, `a"b`},
		{` a\\b`, `a\b`},
		{` "open`, " \"open\x00"},
		{` a\qb`, " a\\qb\x00"},
	} {
		if got := configString(c.in); got != c.want {
			t.Errorf("configString(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
