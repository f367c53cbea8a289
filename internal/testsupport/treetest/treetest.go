// Package treetest writes and looks at the files of a test's tree: a file
// of a size, one aged by days, whether a name is there. It owns these few
// helpers so that each is written once; it never touches a path outside
// the directories a test gives it, and is never imported by a library or
// a shell.
package treetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Write writes a file of size bytes at p, its parents too. Every byte is
// 1, so that no filesystem stores any of it as a hole.
func Write(t testing.TB, p string, size int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, size)
	for i := range data {
		data[i] = 1
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Aged writes a file of size bytes at root/rel, modified days ago, and
// gives its parents below root that time too (a sweep ages a directory by
// its own time).
func Aged(t testing.TB, root, rel string, size, days int) {
	t.Helper()
	p := filepath.Join(root, rel)
	Write(t, p, size)
	when := time.Now().Add(-time.Duration(days) * 24 * time.Hour)
	for d := p; d != root && strings.HasPrefix(d, root); d = filepath.Dir(d) {
		os.Chtimes(d, when, when)
	}
}

// Exists says whether the name p is there (a link counts, whatever it
// points to).
func Exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
