package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
)

// The client's ListFiles gives a whole directory, however many pages the
// server answers it in.
func TestClientListsEveryPage(t *testing.T) {
	r := fixture.New(t, "sqlite", filepath.Join(t.TempDir(), "xfsq.db"))
	r.Add(1<<20, "omni")
	dir := filepath.Join(r.Manager.Root, "projects/omni/many")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 2500 // three pages of the default 1,000
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ts := newServer(t, r)
	l, err := ts.client(readerToken).ListFiles(context.Background(), "omni", "", "many")
	if err != nil || len(l.Entries) != n || l.NextCursor != "" {
		t.Fatalf("ListFiles: %d entries, next %q, %v; want all %d", len(l.Entries), l.NextCursor, err, n)
	}
	for i, e := range l.Entries {
		if want := fmt.Sprintf("f%05d", i); e.Name != want {
			t.Fatalf("entry %d is %q, want %q: pages out of order or repeated", i, e.Name, want)
		}
	}
}
