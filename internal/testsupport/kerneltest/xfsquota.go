package kerneltest

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/quota"
)

// ReportBlocks is `xfs_quota -x -c 'report -p -b -n'` of mnt: each project
// ID's used, soft and hard bytes as the kernel's own tool prints them (in
// KiB; here in bytes). Tests compare xfsq's figures with it, so that what
// xfsq reports is checked against a reader that is not xfsq.
//
// On ext4 it is RepquotaBlocks: the quota tools' own report is the oracle there.
func ReportBlocks(tb testing.TB, mnt string) map[quota.ProjectID][3]uint64 {
	tb.Helper()
	if IsExt4(mnt) {
		return RepquotaBlocks(tb, mnt)
	}
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

// IsExt4 reports whether path is on ext4 (as the cases' filesystems are
// where they ask for it): the oracles and xfs_quota's -f go by it.
func IsExt4(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Type == unix.EXT4_SUPER_MAGIC
}

// XfsQuotaArgs is how to run xfs_quota in expert mode on mnt: on ext4 it
// must be told the filesystem is foreign (-f), where it answers through the
// same kernel interface.
func XfsQuotaArgs(mnt string) []string {
	if IsExt4(mnt) {
		return []string{"-f", "-x"}
	}
	return []string{"-x"}
}

// Repquota is `repquota -P -n -O csv` of mnt: each project ID's usage and
// limits as the quota tools' own report prints them (blocks in KiB; here
// in bytes). It is ext4's oracle as xfs_quota's report is XFS's: the quota
// tools read the kernel through its generic quota interface, not through
// xfsq's code.
func Repquota(tb testing.TB, mnt string) map[quota.ProjectID]quota.Quota {
	tb.Helper()
	out, err := exec.Command("repquota", "-P", "-n", "-O", "csv", mnt).CombinedOutput()
	if err != nil {
		tb.Fatalf("repquota -P -n -O csv %s: %v: %s (apt-get install quota)", mnt, err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	column := map[string]int{}
	for i, name := range strings.Split(lines[0], ",") {
		column[strings.TrimSpace(name)] = i
	}
	names := []string{"Project", "BlockUsed", "BlockSoftLimit", "BlockHardLimit", "FileUsed", "FileSoftLimit", "FileHardLimit"}
	for _, name := range names {
		if _, ok := column[name]; !ok {
			tb.Fatalf("repquota's CSV header %q has no column %s:\n%s", lines[0], name, out)
		}
	}
	rows := map[quota.ProjectID]quota.Quota{}
	for _, line := range lines[1:] {
		f := strings.Split(line, ",")
		if len(f) < len(column) {
			continue
		}
		var n [7]uint64
		for i, name := range names {
			v := strings.TrimPrefix(strings.TrimSpace(f[column[name]]), "#")
			if n[i], err = strconv.ParseUint(v, 10, 64); err != nil {
				tb.Fatalf("repquota line %q, %s: %v", line, name, err)
			}
		}
		id := quota.ProjectID(n[0])
		rows[id] = quota.Quota{ID: id, Usage: quota.Usage{Bytes: n[1] << 10, Inodes: n[4]},
			Limits: quota.Limits{BytesSoft: n[2] << 10, BytesHard: n[3] << 10, InodesSoft: n[5], InodesHard: n[6]}}
	}
	return rows
}

// RepquotaBlocks is Repquota in ReportBlocks's shape: used, soft and hard bytes.
func RepquotaBlocks(tb testing.TB, mnt string) map[quota.ProjectID][3]uint64 {
	tb.Helper()
	rows := map[quota.ProjectID][3]uint64{}
	for id, q := range Repquota(tb, mnt) {
		rows[id] = [3]uint64{q.Bytes, q.BytesSoft, q.BytesHard}
	}
	if len(rows) == 0 {
		tb.Fatalf("repquota %s has no project rows", mnt)
	}
	return rows
}
