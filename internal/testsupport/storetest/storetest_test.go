package storetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A PostgreSQL test skipped for want of a DSN says so in the skip report
// (scripts/test.sh lists them at the end), naming its package and itself.
func TestASkippedPostgresTestIsReported(t *testing.T) {
	if os.Getenv("XFSQ_STORETEST_CHILD") == "1" {
		Postgres(t)
		return
	}
	report := filepath.Join(t.TempDir(), "skipped")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestASkippedPostgresTestIsReported$", "-test.count=1")
	cmd.Env = append(os.Environ(), "XFSQ_STORETEST_CHILD=1", EnvPostgres+"=", "CI=", EnvSkipReport+"="+report)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the child: %v\n%s", err, out)
	}
	got, _ := os.ReadFile(report)
	if want := "./internal/testsupport/storetest TestASkippedPostgresTestIsReported\n"; string(got) != want {
		t.Errorf("skip report %q, want %q", got, want)
	}
}
