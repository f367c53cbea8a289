package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliwords"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/sandbox"
)

// TestDBTypoRefused: a --db naming a SQLite file that does not exist is
// refused by every command but init, which alone creates a store; before
// the composition root moved into the library, a typo made a new empty
// database, parents included, and every project seemed gone.
func TestDBTypoRefused(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "state", "xfsq.db")
	s := newSandbox(t, t.TempDir(), db)
	s.ok("init")
	s.ok("project", "add", "omni", "--bytes-hard", "10m")

	typo := newSandbox(t, s.root, filepath.Join(dir, "stat", "xfsq.db"))
	for _, args := range [][]string{{"project", "list"}, {"report"}, {"project", "add", "other"}, {"events"}, {"doctor"}} {
		r := typo.run(args...)
		if r.code != 2 || !strings.Contains(r.stderr, typo.db) || !strings.Contains(r.stderr, "does not exist") ||
			!strings.Contains(r.stderr, "xfsq init") {
			t.Errorf("xfsq %v with a mistyped --db: exit %d, stderr %q; want 2, naming the file and the fix", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Dir(typo.db)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused command created %s: %v", filepath.Dir(typo.db), err)
	}
	// health never creates a store either: its store part says why.
	if r := typo.run("--json", "health", "--budget", "5s"); !strings.Contains(r.stdout, "does not exist") {
		t.Errorf("health with a mistyped --db: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Dir(typo.db)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("health created %s: %v", filepath.Dir(typo.db), err)
	}
	if out := s.ok("project", "list"); !strings.Contains(out, "omni") {
		t.Errorf("the right --db lost the project: %s", out)
	}
	// init may create a store where --db says (its directory must exist,
	// as it always had to for SQLite).
	fresh := newSandbox(t, t.TempDir(), filepath.Join(dir, "other.db"))
	fresh.ok("init")
	fresh.ok("project", "list")
}

// TestFlagged: the library names its field; the CLI says the flag.
func TestFlagged(t *testing.T) {
	o := sandbox.SnapshotOptions{Walk: inventory.Options{Depth: 9, TopK: 1}}
	if got := cliwords.Flagged(o.Validate()); got != "--depth 9: use 1 to 8" {
		t.Errorf("flagged = %q", got)
	}
	if got := cliwords.Flagged(errors.New("depth of field")); got != "depth of field" {
		t.Errorf("an error without a field was rewritten: %q", got)
	}
	if got := exitCode(o.Validate()); got != exitUsage {
		t.Errorf("exit %d for bad input", got)
	}
}
