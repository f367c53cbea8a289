package server

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// slogLine is what a logger writes for r through slog's JSONHandler.
func slogLine(t testing.TB, r accessRecord) string {
	var b bytes.Buffer
	if err := slog.NewJSONHandler(&b, nil).Handle(context.Background(), r.record()); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// accessLine is what the access log writes for r.
func accessLine(r accessRecord) string {
	var b bytes.Buffer
	newAccessLog(&b).write(&r)
	return b.String()
}

// TestAccessLineIsSlogs: serve's access log is formatted by hand, and must
// stay the line slog's JSONHandler writes for the same record, so that a
// log shipper parses it the same way; the lines a client can make odd
// (its path) go through slog itself.
func TestAccessLineIsSlogs(t *testing.T) {
	at := time.Date(2026, 12, 1, 20, 15, 30, 123456789, time.FixedZone("CET", 3600))
	base := accessRecord{at: at, method: "GET", path: "/v1/workspace/storage/projects/omni/admission", status: 200,
		seconds: 0.000183421, bytes: 312, token: "kernel", requestID: "0f1e2d3c4b5a6978"}
	cases := []struct {
		name string
		edit func(r *accessRecord)
		fast bool // written by hand, not through slog
	}{
		{"a cached admission", func(*accessRecord) {}, true},
		{"no token (401)", func(r *accessRecord) { r.token, r.status = "", 401 }, true},
		{"UTC, whole seconds", func(r *accessRecord) { r.at = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }, true},
		{"a sub-microsecond duration (exponent form)", func(r *accessRecord) { r.seconds = 4.2e-7 }, true},
		{"a zero duration", func(r *accessRecord) { r.seconds = 0 }, true},
		{"a slow request", func(r *accessRecord) { r.seconds = 31.5 }, true},
		{"HTML characters slog leaves alone", func(r *accessRecord) { r.path = "/files/a<b>&c" }, true},
		{"a UTF-8 path", func(r *accessRecord) { r.path = "/files/résumé-日本.txt" }, true},
		{"a quote in the path", func(r *accessRecord) { r.path = `/files/a"b` }, false},
		{"a backslash", func(r *accessRecord) { r.path = `/files/a\b` }, false},
		{"a newline (log injection)", func(r *accessRecord) { r.path = "/files/a\n{\"msg\":\"forged\"}" }, false},
		{"a control byte", func(r *accessRecord) { r.path = "/files/a\x01\tb" }, false},
		{"DEL", func(r *accessRecord) { r.path = "/files/a\x7fb" }, false},
		{"invalid UTF-8", func(r *accessRecord) { r.path = "/files/a\xff\xfeb" }, false},
		{"a line separator", func(r *accessRecord) { r.path = "/files/a\u2028b" }, false},
		{"an odd token name", func(r *accessRecord) { r.token = `ci "nightly"` }, false},
		{"a year past 9999", func(r *accessRecord) { r.at = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := base
			c.edit(&r)
			want := slogLine(t, r)
			if got := accessLine(r); got != want {
				t.Fatalf("access log wrote\n%s\nslog writes\n%s", got, want)
			}
			line, fast := r.appendLine(nil)
			if fast != c.fast {
				t.Fatalf("written by hand: %v, want %v", fast, c.fast)
			}
			if fast && string(line) != want {
				t.Fatalf("the hand-made line\n%s\nslog writes\n%s", line, want)
			}
			if n := strings.Count(accessLine(r), "\n"); n != 1 {
				t.Fatalf("%d newlines in one record's line", n)
			}
		})
	}
}

func FuzzAccessLine(f *testing.F) {
	f.Add("GET", "/v1/workspace/storage", "reader", 0.00012, int64(1234))
	f.Add("PUT", "/files/a\"b\n", "x\u2028", 1e-9, int64(-1))
	f.Fuzz(func(t *testing.T, method, path, token string, seconds float64, n int64) {
		r := accessRecord{at: time.Unix(1796155200, n%1e9), method: method, path: path, status: int(n % 600),
			seconds: seconds, bytes: n, token: token, requestID: "00ff00ff00ff00ff"}
		if got, want := accessLine(r), slogLine(t, r); got != want {
			t.Fatalf("access log wrote\n%q\nslog writes\n%q", got, want)
		}
	})
}
