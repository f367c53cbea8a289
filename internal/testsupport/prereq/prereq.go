// Package prereq decides what a test does when the machine lacks something
// it needs (root, a kernel, PostgreSQL, a tool): skip on a developer's
// machine, fail under CI=true, where a skipped test would be a hidden
// failure. Every such test goes through it, so the rule lives in one place.
package prereq

import (
	"os"
	"path/filepath"
	"testing"
)

// InCI reports whether the tests run in CI (CI=true).
func InCI() bool { return os.Getenv("CI") == "true" }

// Missing skips tb, or fails it in CI, with why (which should name the fix).
func Missing(tb testing.TB, why string) {
	tb.Helper()
	if InCI() {
		tb.Fatal(why)
	}
	tb.Skip(why)
}

// PackageDir is the running test's package as a path in the module
// (./store): go test runs a package's tests in its directory. Lines
// several packages append to one report name their package so.
func PackageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "?"
	}
	for dir := wd; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if rel, err := filepath.Rel(dir, wd); err == nil {
				return "./" + filepath.ToSlash(rel)
			}
		}
	}
	return wd
}
