package kerneltest

import (
	"strings"
	"testing"
)

// The relay must never turn a failure inside the kernel into a pass.
func TestParseVerbose(t *testing.T) {
	out := `=== RUN   TestKernel
=== RUN   TestKernel/Passes
    x_test.go:10: a log line
=== RUN   TestKernel/Passes/inner
--- PASS: TestKernel/Passes/inner (0.00s)
--- PASS: TestKernel/Passes (0.10s)
=== RUN   TestKernel/Fails
    x_test.go:20: wanted 1, got 2
--- FAIL: TestKernel/Fails (0.20s)
=== RUN   TestKernel/Skips
    x_test.go:30: no reason
--- SKIP: TestKernel/Skips (0.00s)
=== RUN   TestKernel/Panics
panic: boom
`
	got := parseVerbose([]byte(out), "TestKernel")
	cases := []struct {
		name, status, contains string
	}{
		{"Passes", "PASS", "a log line"},
		{"Fails", "FAIL", "wanted 1, got 2"},
		{"Skips", "SKIP", "no reason"},
		{"Panics", "", "panic: boom"},
	}
	for _, c := range cases {
		r := got[c.name]
		if r == nil {
			t.Errorf("%s: not found", c.name)
			continue
		}
		if r.status != c.status || !strings.Contains(r.output, c.contains) {
			t.Errorf("%s: status %q output %q; want status %q containing %q", c.name, r.status, r.output, c.status, c.contains)
		}
	}
	if strings.Contains(got["Passes"].output, "wanted 1") {
		t.Error("output of one case leaked into another")
	}
	if len(got) != len(cases) {
		t.Errorf("found %d cases, want %d", len(got), len(cases))
	}
}

func TestShellQuote(t *testing.T) {
	if got := shellQuote(`it's $HOME`); got != `'it'\''s $HOME'` {
		t.Errorf("shellQuote = %s", got)
	}
}
