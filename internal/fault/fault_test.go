//go:build !xfsqfault

package fault

import (
	"os"
	"os/exec"
	"testing"
)

// A build without the tag, as shipped, ignores XFSQ_FAULT: the point is
// reached in a child process with the variable naming it, and the child
// must live.
func TestPointIsInertWithoutTheTag(t *testing.T) {
	if os.Getenv("XFSQ_FAULT_CHILD") == "1" {
		Point("here")
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPointIsInertWithoutTheTag$")
	cmd.Env = append(os.Environ(), "XFSQ_FAULT_CHILD=1", Env+"=here")
	if err := cmd.Run(); err != nil {
		t.Errorf("built without the %s tag, the point still acted on %s: %v", Tag, Env, err)
	}
}
