package core

import (
	"regexp"
	"strings"
	"sync"
	"testing"
)

// The patterns validName and plainUser check by hand.
var (
	namePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`) })
	userPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._][A-Za-z0-9._-]{0,31}\$?$`) })
)

// validName and plainUser accept what their patterns do and nothing
// else: every byte value at every position of names at and around the
// bounds, each shortened and lengthened at every position.
func TestNameAndUserChecksAreTheirPatterns(t *testing.T) {
	for _, c := range []struct {
		name    string
		check   func(string) bool
		pattern func() *regexp.Regexp
		seeds   []string
	}{
		{"validName", validName, namePattern, []string{"a", "0", "omni", "a.b_c-d", strings.Repeat("x", 62), strings.Repeat("y", 63), strings.Repeat("z", 64)}},
		{"plainUser", plainUser, userPattern, []string{"a", "_", ".", "root", "Ab.c_d-e", "host$", "a$", strings.Repeat("u", 31), strings.Repeat("u", 32),
			strings.Repeat("u", 32) + "$", strings.Repeat("u", 33)}},
	} {
		check := func(s string) {
			if got, want := c.check(s), c.pattern().MatchString(s); got != want {
				t.Errorf("%s(%q) = %v, its pattern says %v", c.name, s, got, want)
			}
		}
		for _, s := range []string{"", "$", "$$", "-", "a$$", "a\n", "\na", "A", "é", "a b"} {
			check(s)
		}
		for _, seed := range c.seeds {
			check(seed)
			for i := range len(seed) + 1 {
				if i < len(seed) {
					check(seed[:i] + seed[i+1:])
				}
				for b := range 256 {
					ins := string([]byte{byte(b)})
					check(seed[:i] + ins + seed[i:])
					if i < len(seed) {
						check(seed[:i] + ins + seed[i+1:])
					}
				}
			}
		}
	}
}
