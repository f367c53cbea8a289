package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/xfsq/xfsq/internal/fault"
	"github.com/xfsq/xfsq/internal/testsupport/prereq"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
)

// TestAWriterInAnotherPidNamespaceKeepsItsRoom: on the fallback a write
// through xfsq holds room (its reservation) until it lands. A writer in a
// pid namespace of its own under the same hostname (a container sharing
// the host's UTS namespace) is frozen with its reservation held; a second
// writer on the host must count that room, not take the first for gone
// because its pid names nothing, or another process, here. Then the
// frozen write lands, and the tree stays within its hard limit.
func TestAWriterInAnotherPidNamespaceKeepsItsRoom(t *testing.T) {
	if os.Geteuid() != 0 {
		prereq.Missing(t, "a pid namespace needs root: run the tests as root")
	}
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			s := fallbackSandbox(t, d.DSN(t))
			s.ok("project", "add", "omni", "--bytes-hard", "1m")
			src := t.TempDir()
			for _, n := range []string{"a.bin", "b.bin"} {
				if err := os.WriteFile(filepath.Join(src, n), make([]byte, 700<<10), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			frozen := s.startInPidNamespace(t, []string{fault.Env + "=put:before-fsync", fault.ActionEnv + "=stop"},
				"files", "put", "omni", "a.bin", "--from", filepath.Join(src, "a.bin"))
			frozen.waitStopped(t)

			r := s.run("files", "put", "omni", "b.bin", "--from", filepath.Join(src, "b.bin"))
			if r.code == 0 {
				t.Errorf("a second 700 KiB write beside a frozen one of 700 KiB into a 1 MiB tree was admitted")
			}
			if code, stderr := frozen.thaw(t); code != 0 {
				t.Fatalf("the frozen write, thawed: exit %d: %s", code, stderr)
			}
			row := s.report()["omni/workspace"]
			if row.UsedBytes > 1<<20 {
				t.Errorf("the tree holds %d bytes, past its hard limit of 1 MiB", row.UsedBytes)
			}
		})
	}
}
