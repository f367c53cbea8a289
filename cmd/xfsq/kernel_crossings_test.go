package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/kerneltest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox"
)

// A tenant writing from its container (not through xfsq) past its soft
// limit and up to its hard one is journalled by the next pass, from the
// kernel's counters: each limit once, with the figures and when the
// kernel's grace ends; back under, storage.quota_ok.
func testXFSPassCrossings(t *testing.T, fs *kerneltest.FS) {
	s := xfsSandbox(t, fs)
	args := passCommand(t)
	s.ok("project", "add", "omni", "--bytes-soft", "1m", "--bytes-hard", "4m")
	if _, err := kerneltest.Fill(filepath.Join(s.root, "projects/omni/f"), 2*mib); err != nil {
		t.Fatalf("a write over the soft limit: %v", err)
	}
	s.ok(args...)
	s.ok(args...)
	kernelTreeSees(t, s, []string{"exceeded bytes_soft kernel"})
	kerneltest.Fill(filepath.Join(s.root, "projects/omni/g"), 4*mib) // stopped by the kernel at the hard limit
	s.ok(args...)
	kernelTreeSees(t, s, []string{"exceeded bytes_soft kernel", "exceeded bytes_hard kernel"})
	os.Remove(filepath.Join(s.root, "projects/omni/f"))
	os.Remove(filepath.Join(s.root, "projects/omni/g"))
	s.ok(args...)
	kernelTreeSees(t, s, []string{"exceeded bytes_soft kernel", "exceeded bytes_hard kernel", "ok bytes_soft kernel", "ok bytes_hard kernel"})
}

// kernelTreeSees holds the journal's crossing records, oldest first, as
// "exceeded LIMIT SEEN_BY" and "ok LIMIT SEEN_BY".
func kernelTreeSees(t *testing.T, s *testRoot, want []string) {
	t.Helper()
	var evs []sandbox.Event
	s.json(&evs, "events")
	var got []string
	for i := len(evs) - 1; i >= 0; i-- {
		switch e := evs[i]; e.Type {
		case journal.TypeQuotaExceeded:
			var p journal.QuotaExceeded
			json.Unmarshal(e.Payload, &p)
			got = append(got, "exceeded "+p.Limit+" "+p.SeenBy)
			if p.Limit == journal.LimitBytesSoft && p.GraceEndsAt == nil {
				t.Errorf("the soft limit's record does not say when its grace ends: %s", e.Payload)
			}
		case journal.TypeQuotaOK:
			var p journal.QuotaOK
			json.Unmarshal(e.Payload, &p)
			got = append(got, "ok "+p.Limit+" "+p.SeenBy)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("crossings journalled: %q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("crossings journalled: %q, want %q", got, want)
		}
	}
}
