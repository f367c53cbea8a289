package prereq

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Helper mode: call Missing in a child test process.
func TestMissingHelper(t *testing.T) {
	if os.Getenv("XFSQ_PREREQ_HELPER") != "1" {
		return
	}
	Missing(t, "xfsprogs is missing: apt-get install xfsprogs")
}

func TestMissingSkipsOutsideCIAndFailsInCI(t *testing.T) {
	for _, c := range []struct {
		ci       string
		wantFail bool
		wantWord string
	}{{"", false, "SKIP"}, {"false", false, "SKIP"}, {"true", true, "FAIL"}} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestMissingHelper$", "-test.v")
		cmd.Env = append(os.Environ(), "XFSQ_PREREQ_HELPER=1", "CI="+c.ci)
		out, err := cmd.CombinedOutput()
		if (err != nil) != c.wantFail || !strings.Contains(string(out), c.wantWord) || !strings.Contains(string(out), "apt-get install xfsprogs") {
			t.Errorf("CI=%q: err %v, output:\n%s\nwant %s naming the fix", c.ci, err, out, c.wantWord)
		}
	}
}
