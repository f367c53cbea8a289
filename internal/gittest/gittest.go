// Package gittest makes git repositories for tests: the sweep reads git's
// own index, so its fixtures are written by git itself. xfsq never runs
// git; only tests do, through here.
package gittest

import (
	"os/exec"
	"testing"

	"github.com/xfsq/xfsq/internal/prereq"
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
