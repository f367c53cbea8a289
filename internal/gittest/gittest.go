// Package gittest makes git repositories for tests: the sweep reads git's
// own index, so its fixtures are written by git itself. xfsq never runs
// git; only tests do, through here.
package gittest

import (
	"os/exec"
	"testing"

	"github.com/xfsq/xfsq/internal/prereq"
)

// Run runs git in dir with a fixed identity and fails t with git's output
// if it fails. Without git the test is skipped, or fails in CI.
func Run(t testing.TB, dir string, args ...string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		prereq.Missing(t, "git is needed to make the test's repositories: apt-get install git")
	}
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@x"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}
