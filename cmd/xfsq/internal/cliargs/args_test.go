package cliargs

import (
	"regexp"
	"testing"
)

// isNegativeNumber is the regexp it replaced, -[0-9][0-9.]*[A-Za-z]*,
// written out so that no command compiles a regexp at its start.
func TestIsNegativeNumberIsTheRegexp(t *testing.T) {
	re := regexp.MustCompile(`^-[0-9][0-9.]*[A-Za-z]*$`)
	for _, a := range []string{"-1", "-5g", "-0.5", "-10GiB", "-1.5.2k", "-9z", "-", "--1", "-a", "-1-", "-1g2", "-1 ",
		"-1@", "-1[", "-1`", "-1{", "-.5", "1", "", "-1é", "-١", "--json", "-1Ki"} {
		if got, want := isNegativeNumber(a), re.MatchString(a); got != want {
			t.Errorf("isNegativeNumber(%q) = %v, the regexp says %v", a, got, want)
		}
	}
}
