package main

import (
	"strings"
	"testing"
	"time"
)

// What test.sh shows: each package as it starts, a failed test's output,
// go test's closing lines unchanged; a passing test's output only with -all.
func TestSummary(t *testing.T) {
	input := strings.Join([]string{
		`{"Action":"start","Package":"x/a"}`,
		`{"Action":"start","Package":"x/b"}`,
		`{"Action":"run","Package":"x/a","Test":"TestOK"}`,
		`{"Action":"output","Package":"x/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}`,
		`{"Action":"output","Package":"x/a","Test":"TestOK","Output":"quiet detail\n"}`,
		`{"Action":"pass","Package":"x/a","Test":"TestOK"}`,
		`{"Action":"output","Package":"x/a","Output":"PASS\n"}`,
		`{"Action":"output","Package":"x/a","Output":"ok  \tx/a\t0.1s\n"}`,
		`{"Action":"pass","Package":"x/a"}`,
		`{"Action":"output","Package":"x/b","Test":"TestBad","Output":"    b_test.go:9: broken\n"}`,
		`{"Action":"output","Package":"x/b","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}`,
		`{"Action":"fail","Package":"x/b","Test":"TestBad"}`,
		`{"Action":"output","Package":"x/b","Output":"FAIL\tx/b\t0.2s\n"}`,
		`{"Action":"fail","Package":"x/b"}`,
		`# x/c`,
	}, "\n")
	var out strings.Builder
	s := newSummary(&out, false)
	s.read(strings.NewReader(input))
	got := out.String()
	for _, want := range []string{"=== package 1: x/a\n", "=== package 2: x/b\n", "ok  \tx/a\t0.1s\n",
		"b_test.go:9: broken\n--- FAIL: TestBad", "FAIL\tx/b\t0.2s\n", "# x/c\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "quiet detail") || strings.Contains(got, "PASS\n") {
		t.Errorf("a passing test's output was printed:\n%s", got)
	}
	out.Reset()
	s = newSummary(&out, true)
	s.read(strings.NewReader(input))
	if !strings.Contains(out.String(), "quiet detail") {
		t.Errorf("-all did not print a passing test's output:\n%s", out.String())
	}
}

// A package that runs long is named while it runs, with how long.
func TestStillRunning(t *testing.T) {
	var out strings.Builder
	s := newSummary(&out, false)
	s.handle(event{Action: "start", Package: "x/slow"})
	s.running["x/slow"] = time.Now().Add(-95 * time.Second)
	s.stillRunning()
	if !strings.Contains(out.String(), "still running: x/slow (95 s)") {
		t.Errorf("got %q", out.String())
	}
	s.handle(event{Action: "pass", Package: "x/slow"})
	out.Reset()
	s.stillRunning()
	if out.Len() != 0 {
		t.Errorf("a finished package is still named: %q", out.String())
	}
}
