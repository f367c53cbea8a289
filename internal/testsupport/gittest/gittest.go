// Package gittest makes git repositories for tests: the sweep reads git's
// own index, so its fixtures are written by git itself. xfsq never runs
// git; only tests do, through here. It also writes the files of a working
// tree, and by hand the indexes git would not write (an attack's).
package gittest

import (
	"crypto/sha1"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// command is git in dir with a fixed identity, allowed to clone local
// paths (submodule fixtures), or skips t (fails it in CI) without git.
func command(t testing.TB, dir string, args []string) *exec.Cmd {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		prereq.Missing(t, "git is needed to make the test's repositories: apt-get install git")
	}
	return exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@x", "-c", "protocol.file.allow=always"}, args...)...)
}

// Run runs git in dir and fails t with git's output if it fails.
func Run(t testing.TB, dir string, args ...string) {
	t.Helper()
	if out, err := command(t, dir, args).CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// Output runs git like Run and returns its standard output.
func Output(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := command(t, dir, args).Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}

// WriteFiles writes each file (and its directories) under dir, its path as
// its content.
func WriteFiles(t testing.TB, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FixSum rewrites an index's trailing SHA-1 for its content.
func FixSum(data []byte) []byte {
	data = slices.Clone(data)
	if len(data) < sha1.Size {
		return data
	}
	sum := sha1.Sum(data[:len(data)-sha1.Size])
	copy(data[len(data)-sha1.Size:], sum[:])
	return data
}

// V4Growing is a version 4 index of n paths, each the one before and
// suffix more.
func V4Growing(n int, suffix string) []byte {
	buf := append([]byte("DIRC"), 0, 0, 0, 4)
	buf = binary.BigEndian.AppendUint32(buf, uint32(n))
	name := 0
	for range n {
		e := make([]byte, 40, 64)
		binary.BigEndian.PutUint32(e[24:], 0o100644)
		e = append(e, make([]byte, sha1.Size)...)
		name += len(suffix)
		e = binary.BigEndian.AppendUint16(e, uint16(min(name, 0xfff)))
		buf = append(append(append(buf, e...), 0), append([]byte(suffix), 0)...)
	}
	return FixSum(append(buf, make([]byte, sha1.Size)...))
}
