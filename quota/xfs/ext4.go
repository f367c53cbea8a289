package xfs

import (
	"fmt"
	"io"
	"math"
	"os"

	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/quota/xfs/quotactl"
	"github.com/xfsq/xfsq/units"
)

// Kind is the filesystem a kernel backend runs on. XFS and ext4 answer the
// same project quota interface (FS_IOC_FSSETXATTR with PROJINHERIT, and the
// XFS-format quotactl commands, which the kernel's generic quota layer
// answers for ext4), so one backend serves both; what differs is detection,
// the largest limit, the grace periods' home and who may bypass a limit.
type Kind string

const (
	KindXFS  Kind = "xfs"
	KindExt4 Kind = "ext4"
)

// fixExt4 is how an ext4 filesystem gets project quotas: the features can
// only be turned on unmounted, and the mount must ask for enforcement.
const fixExt4 = "unmount it, run tune2fs -O quota,project on its device (e2fsprogs 1.43 or later; mkfs.ext4 -O quota,project for a new one), " +
	"and mount it with -o prjquota (scripts/loopback-ext4.sh checks each step)"

// BypassNote is what an operator must know about an ext4 root: the
// kernel's generic quota code lets a process holding CAP_SYS_RESOURCE
// write past a hard limit, where XFS binds root too.
const BypassNote = "on ext4 a writer holding CAP_SYS_RESOURCE (root, unless the capability is dropped, as Docker does for containers) " +
	"bypasses project limits; xfsq drops it for its own writes into a tree"

// Limits of the quota file formats (fs/quota/quota_v2.c): version 0 keeps
// 32-bit limits in 1 KiB quota blocks; version 1, which mkfs.ext4 -O quota
// writes, keeps 64-bit ones, bounded by the kernel's signed 64-bit byte
// count — less the last KiB, as the limit is stored rounded up to KiB.
var (
	ext4V0Max = quota.Limits{BytesSoft: math.MaxUint32 << 10, BytesHard: math.MaxUint32 << 10,
		InodesSoft: math.MaxUint32, InodesHard: math.MaxUint32}
	ext4V1Max = quota.Limits{BytesSoft: math.MaxInt64 &^ 1023, BytesHard: math.MaxInt64 &^ 1023,
		InodesSoft: math.MaxInt64, InodesHard: math.MaxInt64}
)

// readExt4Format learns the largest limits the ext4 quota file holds.
func (fs *FS) readExt4Format() error {
	format, err := fs.target.GetFmt(quotactl.PrjQuota)
	if err != nil {
		return &quota.OpError{Op: "read quota format of", Tree: fs.mount.MountPoint,
			Syscall: fs.target.SyscallName(quotactl.QGetFmt), Err: err}
	}
	switch format {
	case quotactl.FmtVFSV0:
		fs.max = ext4V0Max
	default:
		fs.max = ext4V1Max
	}
	return nil
}

// MaxLimits is the largest value each limit may take on this filesystem;
// a zero field has no bound below xfsq's own (8 EiB).
func (fs *FS) MaxLimits() quota.Limits { return fs.max }

// CheckLimits refuses limits the filesystem cannot hold, naming its
// maximum: the kernel would refuse them with a bare ERANGE.
func (fs *FS) CheckLimits(l quota.Limits) error {
	check := func(what string, v, most uint64, format func(uint64) string) error {
		if most == 0 || v <= most {
			return nil
		}
		return &LimitTooLargeError{FS: string(fs.kind), Limit: what, Value: format(v), Max: format(most)}
	}
	bytes := func(n uint64) string { return fmt.Sprintf("%s (%d bytes)", units.FormatIEC(n), n) }
	count := func(n uint64) string { return fmt.Sprintf("%d", n) }
	for _, err := range []error{
		check("bytes_soft", l.BytesSoft, fs.max.BytesSoft, bytes),
		check("bytes_hard", l.BytesHard, fs.max.BytesHard, bytes),
		check("inodes_soft", l.InodesSoft, fs.max.InodesSoft, count),
		check("inodes_hard", l.InodesHard, fs.max.InodesHard, count),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// LimitTooLargeError is a limit above what the filesystem can hold.
type LimitTooLargeError struct {
	FS, Limit, Value, Max string
}

func (e *LimitTooLargeError) Error() string {
	return fmt.Sprintf("%s %s is above %s's maximum of %s", e.Limit, e.Value, e.FS, e.Max)
}

// ext4UUID reads s_uuid from the ext4 superblock (1024 bytes in; s_magic
// 0xEF53 at 0x38, s_uuid at 0x68).
func ext4UUID(device string) (string, error) {
	f, err := os.Open(device)
	if err != nil {
		return "", fmt.Errorf("read ext4 superblock for the filesystem UUID: %w", err)
	}
	defer f.Close()
	sb := make([]byte, 0x78)
	if _, err := f.ReadAt(sb, 1024); err != nil && err != io.EOF {
		return "", fmt.Errorf("read ext4 superblock of %s: %w", device, err)
	}
	if sb[0x38] != 0x53 || sb[0x39] != 0xEF {
		return "", fmt.Errorf("%s has no ext4 superblock (magic %#x)", device, sb[0x38:0x3a])
	}
	return formatUUID(sb[0x68:0x78]), nil
}

func formatUUID(u []byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
