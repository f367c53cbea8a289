package fallback

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/quota"
)

func TestAdmit(t *testing.T) {
	base := State{Tree: `project "omni" workspace`, Limits: quota.Limits{BytesHard: 100, InodesHard: 10},
		Used: quota.Usage{Bytes: 60, Inodes: 8}, RootUsed: 500, RootBudget: 1000, MaxFileBytes: 50}
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	// soft is base with soft limits of 50 B and 6 inodes (both exceeded)
	// and the grace ends given, read at at.
	soft := func(bytesEnd, inodesEnd time.Time) State {
		s := base
		s.Limits.BytesSoft, s.Limits.InodesSoft = 50, 6
		s.BytesGraceEnds, s.InodesGraceEnds, s.Now = bytesEnd, inodesEnd, at
		return s
	}
	cases := []struct {
		name  string
		state State
		req   Request
		limit string // "" admits
	}{
		{"fits", base, Request{FileBytes: 10, Bytes: 10, Inodes: 1}, ""},
		{"exactly at the byte limit", base, Request{FileBytes: 40, Bytes: 40, Inodes: 1}, ""},
		{"one byte over", base, Request{FileBytes: 41, Bytes: 41, Inodes: 1}, "bytes_hard"},
		{"exactly at the inode limit", base, Request{Bytes: 1, Inodes: 2}, ""},
		{"one inode over", base, Request{Bytes: 1, Inodes: 3}, "inodes_hard"},
		{"a replacement adds no inode", func() State { s := base; s.Used.Inodes = 10; return s }(), Request{FileBytes: 5, Bytes: 5}, ""},
		{"a shrinking replacement passes a full tree", func() State { s := base; s.Used.Bytes = 100; return s }(), Request{FileBytes: 5}, ""},
		{"per-write limit exactly", base, Request{FileBytes: 50, Bytes: 0}, ""},
		{"per-write limit one over", base, Request{FileBytes: 51}, "max_file_bytes"},
		{"root budget", func() State { s := base; s.RootUsed = 995; return s }(), Request{FileBytes: 6, Bytes: 6, Inodes: 1}, "root_budget"},
		{"root budget exactly", func() State { s := base; s.RootUsed = 995; return s }(), Request{FileBytes: 5, Bytes: 5, Inodes: 1}, ""},
		{"no limits at all", State{Used: quota.Usage{Bytes: 1 << 60}}, Request{FileBytes: 1 << 40, Bytes: 1 << 40, Inodes: 1}, ""},
		// A soft limit past its grace refuses what would leave the tree
		// over it, as XFS does; within the grace it refuses nothing.
		{"over the soft limit within its grace", soft(at.Add(time.Second), time.Time{}), Request{FileBytes: 10, Bytes: 10, Inodes: 1}, ""},
		{"over the soft limit past its grace", soft(at, time.Time{}), Request{FileBytes: 1, Bytes: 1}, "bytes_soft"},
		{"past the grace, a shrinking replacement", soft(at, time.Time{}), Request{FileBytes: 5}, ""},
		{"past the grace, exactly back to the soft limit", func() State { s := soft(at, time.Time{}); s.Used.Bytes = 40; return s }(), Request{FileBytes: 10, Bytes: 10}, ""},
		{"past the grace, one byte over the soft limit", func() State { s := soft(at, time.Time{}); s.Used.Bytes = 40; return s }(), Request{FileBytes: 11, Bytes: 11}, "bytes_soft"},
		{"no timer running", soft(time.Time{}, time.Time{}), Request{FileBytes: 10, Bytes: 10, Inodes: 1}, ""},
		{"inodes past their grace", soft(time.Time{}, at), Request{Bytes: 0, Inodes: 1}, "inodes_soft"},
		{"inodes past their grace, a replacement adds none", soft(time.Time{}, at), Request{FileBytes: 5, Bytes: 5}, ""},
		{"the hard limit names itself first", soft(at, time.Time{}), Request{FileBytes: 41, Bytes: 41}, "bytes_hard"},
		// A name's room is reserved but refused only by a tree past a
		// limit without it: content that fits exactly is admitted, and a
		// zero-byte file is refused once its directory's growth has
		// taken the tree past.
		{"a name beside content that fits exactly", base, Request{FileBytes: 40, Bytes: 40, Inodes: 1, Names: 4096}, ""},
		{"a zero-byte file's name at the limit", func() State { s := base; s.Used.Bytes = 100; return s }(), Request{Inodes: 1, Names: 4096}, ""},
		{"a zero-byte file's name past the limit", func() State { s := base; s.Used.Bytes = 101; return s }(), Request{Inodes: 1, Names: 4096}, "bytes_hard"},
		{"a zero-byte file's name past the soft limit's grace", func() State { s := soft(at, time.Time{}); s.Used.Bytes = 51; return s }(), Request{Names: 4096}, ""},
		{"a zero-byte file's name past the root budget", func() State { s := base; s.RootUsed = 1001; return s }(), Request{Names: 4096}, "root_budget"},
	}
	for _, c := range cases {
		err := Admit(c.state, c.req)
		var le *quota.LimitError
		switch {
		case c.limit == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.limit != "" && (!errors.As(err, &le) || le.Limit != c.limit):
			t.Errorf("%s: %v, want refusal by %s", c.name, err, c.limit)
		}
	}
	err := Admit(base, Request{FileBytes: 41, Bytes: 41, Inodes: 1})
	for _, want := range []string{`project "omni" workspace`, "disk quota exceeded", "60 B on disk", "41 B requested", "100 B limit", "bytes_hard"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	err = Admit(soft(at, time.Time{}), Request{FileBytes: 1, Bytes: 1})
	for _, want := range []string{"disk quota exceeded", "60 B on disk", "1 B requested", "50 B limit", "bytes_soft, whose grace ended 2026-12-04T12:00:00Z"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
}
