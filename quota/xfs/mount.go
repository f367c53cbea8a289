package xfs

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

type mountEntry struct {
	MountPoint string
	Source     string // the block device, e.g. /dev/loop0
	FSType     string
	// projectQuotaOption: the superblock options ask for project quotas.
	projectQuotaOption bool
}

// findMount finds the mount whose device number is dev in /proc/self/mountinfo.
func findMount(dev uint64) (mountEntry, error) {
	mounts, err := procfs.GetMounts()
	if err != nil {
		return mountEntry{}, fmt.Errorf("read /proc/self/mountinfo: %w", err)
	}
	want := fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev))
	var found *procfs.MountInfo
	for _, m := range mounts {
		// The last match wins: a later mount on the same device shadows earlier ones.
		if m.MajorMinorVer == want {
			found = m
		}
	}
	if found == nil {
		return mountEntry{}, fmt.Errorf("no mount of device %s in /proc/self/mountinfo", want)
	}
	e := mountEntry{MountPoint: found.MountPoint, Source: found.Source, FSType: found.FSType}
	for _, opt := range []string{"prjquota", "pquota", "pqnoenforce"} {
		if _, ok := found.SuperOptions[opt]; ok {
			e.projectQuotaOption = true
		}
	}
	return e, nil
}

// UUID reads the filesystem UUID from the XFS (or ext4) superblock on the device, so
// ID records survive remounts, renamed loop devices and reboots.
func (fs *FS) UUID() (string, error) {
	if fs.kind == KindExt4 {
		return ext4UUID(fs.mount.Source)
	}
	f, err := os.Open(fs.mount.Source)
	if err != nil {
		return "", fmt.Errorf("read XFS superblock for the filesystem UUID: %w", err)
	}
	defer f.Close()
	// struct xfs_sb: sb_magicnum (4) … sb_uuid at offset 32, 16 bytes.
	sb := make([]byte, 48)
	if _, err := io.ReadFull(f, sb); err != nil {
		return "", fmt.Errorf("read XFS superblock of %s: %w", fs.mount.Source, err)
	}
	if !bytes.Equal(sb[:4], []byte("XFSB")) {
		return "", fmt.Errorf("%s has no XFS superblock (magic %q)", fs.mount.Source, sb[:4])
	}
	return formatUUID(sb[32:48]), nil
}
