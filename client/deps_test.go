package client

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// A service that takes the client as a module links the standard library,
// the wire types and what they import (units), and nothing else: no store,
// no SQLite or PostgreSQL driver, no Docker SDK, no procfs, no quotactl.
func TestClientLinksOnlyTheWire(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		prereq.Missing(t, "the client's dependencies are read with go list: install Go")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	want := []string{"github.com/xfsq/xfsq/api/v1", "github.com/xfsq/xfsq/client", "github.com/xfsq/xfsq/units"}
	got := strings.Fields(string(out))
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the client links %d packages beyond the standard library:\n%s\nwant only %v",
			len(got), strings.Join(got, "\n"), want)
	}
}
