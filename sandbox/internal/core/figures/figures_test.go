package figures

import (
	"strings"
	"testing"
	"time"
)

func TestJudge(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	past, future := now.Add(-time.Hour), now.Add(time.Hour)
	const g = 1 << 30
	cases := []struct {
		name     string
		tree     TreeStatus
		decision string
		msg      string
	}{
		{"under everything", TreeStatus{UsedBytes: g, BytesHard: 50 * g}, Ok, "ok (1.0 GiB of 50.0 GiB)"},
		{"no limits", TreeStatus{UsedBytes: g}, Ok, "no hard limit"},
		{"exactly at hard", TreeStatus{UsedBytes: 50 * g, BytesHard: 50 * g}, Deny, "disk quota exceeded (50.0 GiB of 50.0 GiB)"},
		{"one byte under hard", TreeStatus{UsedBytes: 50*g - 1, BytesHard: 50 * g}, Ok, "ok"},
		{"inodes at hard", TreeStatus{UsedInodes: 10, InodesHard: 10}, Deny, "file count quota exceeded (10 of 10 files)"},
		{"over soft within grace", TreeStatus{UsedBytes: 45 * g, BytesSoft: 40 * g, BytesHard: 50 * g, BytesGraceEndsAt: &future}, Warn, "over the soft disk limit (45.0 GiB of 40.0 GiB), grace ends"},
		{"over soft, no timer (fallback)", TreeStatus{UsedBytes: 45 * g, BytesSoft: 40 * g}, Warn, "over the soft disk limit"},
		{"over soft past grace", TreeStatus{UsedBytes: 45 * g, BytesSoft: 40 * g, BytesHard: 50 * g, BytesGraceEndsAt: &past}, Deny, "past its grace"},
		{"inodes over soft past grace", TreeStatus{UsedInodes: 11, InodesSoft: 10, InodesGraceEndsAt: &past}, Deny, "file count quota exceeded: over the soft limit past its grace"},
		{"at soft is not over", TreeStatus{UsedBytes: 40 * g, BytesSoft: 40 * g}, Ok, "ok"},
	}
	for _, c := range cases {
		d, msg := Judge(c.tree, now)
		if d != c.decision || !strings.Contains(msg, c.msg) {
			t.Errorf("%s: %s %q; want %s containing %q", c.name, d, msg, c.decision, c.msg)
		}
	}
}

// On ext4 less than a page below the hard limit is no room: the kernel
// reserves a page for each page a write dirties and stops writes up to a
// page short of the limit, so admission denies there as it does at it.
func TestExceededWithinAPageOnExt4(t *testing.T) {
	const limit = 10 << 20
	page := pageSize
	cases := []struct {
		name string
		used uint64
		kind string
		want bool
	}{
		{"xfs a KiB short", limit - 1024, BackendXFS, false},
		{"xfs at the limit", limit, BackendXFS, true},
		{"fallback a KiB short", limit - 1024, BackendFallback, false},
		{"ext4 a KiB short", limit - 1024, BackendExt4, true},
		{"ext4 a page short", limit - page, BackendExt4, false},
		{"ext4 well below", limit / 2, BackendExt4, false},
	}
	for _, c := range cases {
		ts := TreeStatus{BytesHard: limit, UsedBytes: c.used, Backend: Backend{Kind: c.kind, Enforced: c.kind != BackendFallback}}
		if got := Exceeded(ts, time.Now()); got != c.want {
			t.Errorf("%s: Exceeded %v, want %v", c.name, got, c.want)
		}
	}
}
