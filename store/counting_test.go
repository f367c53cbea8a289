package store

import (
	"context"
	"path/filepath"
	"testing"
)

// Commits are timed only between TrackCommits and Commits, each commit
// once, and Commits empties what it returns; statements are counted
// either way.
func TestTrackCommits(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "xfsq.db"), "h")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	set := func(v string) {
		t.Helper()
		if err := s.InTx(ctx, func(tx *Tx) error { _, err := tx.SetSetting(ctx, "busy_grace", v); return err }); err != nil {
			t.Fatal(err)
		}
	}
	set("1h")
	s.TrackCommits()
	before := s.Statements()
	set("2h")
	set("3h")
	got := s.Commits()
	if len(got) != 2 {
		t.Fatalf("two commits tracked, Commits() = %v", got)
	}
	for _, d := range got {
		if d <= 0 {
			t.Errorf("a commit took %s", d)
		}
	}
	if s.Statements()-before < 4 {
		t.Errorf("statements while tracking: %d, want at least two BEGINs and two COMMITs", s.Statements()-before)
	}
	set("4h")
	if got := s.Commits(); len(got) != 0 {
		t.Errorf("after Commits(), untracked commits were kept: %v", got)
	}
}
