package kerneltest

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/quota"
)

// ReportBlocks is `xfs_quota -x -c 'report -p -b -n'` of mnt: each project
// ID's used, soft and hard bytes as the kernel's own tool prints them (in
// KiB; here in bytes). Tests compare xfsq's figures with it, so that what
// xfsq reports is checked against a reader that is not xfsq.
func ReportBlocks(tb testing.TB, mnt string) map[quota.ProjectID][3]uint64 {
	tb.Helper()
	out, err := exec.Command("xfs_quota", "-x", "-c", "report -p -b -n", mnt).CombinedOutput()
	if err != nil {
		tb.Fatalf("xfs_quota report -p -b -n %s: %v: %s", mnt, err, out)
	}
	rows := map[quota.ProjectID][3]uint64{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "#") {
			continue
		}
		id, err := strconv.ParseUint(f[0][1:], 10, 32)
		if err != nil {
			continue
		}
		var row [3]uint64
		for i := range row {
			kib, err := strconv.ParseUint(f[1+i], 10, 64)
			if err != nil {
				tb.Fatalf("xfs_quota report line %q: %v", line, err)
			}
			row[i] = kib << 10
		}
		rows[quota.ProjectID(id)] = row
	}
	if len(rows) == 0 {
		tb.Fatalf("xfs_quota report has no project rows:\n%s", out)
	}
	return rows
}
