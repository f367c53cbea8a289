// Package quotactl wraps the XFS quota commands of quotactl(2) and
// quotactl_fd(2) (linux/dqblk_xfs.h, linux/quota.h) for pure Go, no cgo.
// XFS answers them, and so does the kernel's generic quota layer for ext4.
//
// It is the bottom layer: structs that match the kernel ABI, command numbers
// and one function per command. It holds no policy and never interprets a
// path; which descriptor or device to address is the caller's choice.
package quotactl

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Quota types (linux/quota.h).
const (
	UsrQuota = 0
	GrpQuota = 1
	PrjQuota = 2
)

// XFS quota commands: XQM_CMD(x) = ('X'<<8) + x (linux/dqblk_xfs.h).
const (
	xqmCmdBase   = 'X' << 8
	QXGetQuota   = xqmCmdBase + 3
	QXSetQLim    = xqmCmdBase + 4
	QXGetQStatV  = xqmCmdBase + 8
	QXGetNextQuo = xqmCmdBase + 9
)

// QGetFmt is the generic quota layer's Q_GETFMT (linux/quota.h): which
// quota file format backs a filesystem that keeps quotas in files (ext4),
// and so how large a limit it can hold. XFS does not answer it.
const QGetFmt = 0x800004

// Quota formats Q_GETFMT answers (linux/quota.h QFMT_*).
const (
	FmtVFSV0 = 2 // 32-bit limits (in 1 KiB quota blocks) and inode counts
	FmtVFSV1 = 4 // 64-bit: what mkfs.ext4 -O quota writes
)

// QCmd builds the cmd argument of quotactl: QCMD(cmd, type) from linux/quota.h.
func QCmd(cmd, typ uint32) uint32 {
	const subCmdShift, subCmdMask = 8, 0x00ff
	return cmd<<subCmdShift | typ&subCmdMask
}

// CmdName names a command for error messages, e.g. "Q_XSETQLIM".
func CmdName(cmd uint32) string {
	switch cmd {
	case QXGetQuota:
		return "Q_XGETQUOTA"
	case QXSetQLim:
		return "Q_XSETQLIM"
	case QXGetQStatV:
		return "Q_XGETQSTATV"
	case QXGetNextQuo:
		return "Q_XGETNEXTQUOTA"
	case QGetFmt:
		return "Q_GETFMT"
	}
	return fmt.Sprintf("Q_X(%#x)", cmd)
}

// DiskQuota mirrors struct fs_disk_quota (112 bytes). Block counts and limits
// are in 512-byte basic blocks.
type DiskQuota struct {
	Version      int8
	Flags        int8
	FieldMask    uint16
	ID           uint32
	BlkHardLimit uint64
	BlkSoftLimit uint64
	InoHardLimit uint64
	InoSoftLimit uint64
	BCount       uint64
	ICount       uint64
	ITimer       int32
	BTimer       int32
	IWarns       uint16
	BWarns       uint16
	ITimerHi     int8
	BTimerHi     int8
	RTBTimerHi   int8
	_            int8
	RTBHardLimit uint64
	RTBSoftLimit uint64
	RTBCount     uint64
	RTBTimer     int32
	RTBWarns     uint16
	_            int16
	_            [8]byte
}

// Values for DiskQuota.Version, .Flags and .FieldMask.
const (
	DiskQuotaVersion = 1      // FS_DQUOT_VERSION
	FlagProjQuota    = 2      // FS_PROJ_QUOTA
	FieldISoft       = 1 << 0 // FS_DQ_ISOFT
	FieldIHard       = 1 << 1 // FS_DQ_IHARD
	FieldBSoft       = 1 << 2 // FS_DQ_BSOFT
	FieldBHard       = 1 << 3 // FS_DQ_BHARD
	FieldBTimer      = 1 << 6 // FS_DQ_BTIMER
	FieldITimer      = 1 << 7 // FS_DQ_ITIMER
	FieldLimits      = FieldISoft | FieldIHard | FieldBSoft | FieldBHard
)

// BTimerSeconds and ITimerSeconds join the 40-bit timers (low 32 bits plus
// the _hi byte that big-time filesystems use).
func (q *DiskQuota) BTimerSeconds() int64 { return joinTimer(q.BTimer, q.BTimerHi) }
func (q *DiskQuota) ITimerSeconds() int64 { return joinTimer(q.ITimer, q.ITimerHi) }

func joinTimer(lo int32, hi int8) int64 { return int64(uint32(lo)) | int64(hi)<<32 }

// QFileStatV mirrors struct fs_qfilestatv (24 bytes).
type QFileStatV struct {
	Ino      uint64
	NBlks    uint64
	NExtents uint32
	_        uint32
}

// StatV mirrors struct fs_quota_statv (160 bytes).
type StatV struct {
	Version      int8
	_            uint8
	Flags        uint16
	IncoreDQs    uint32
	UQuota       QFileStatV
	GQuota       QFileStatV
	PQuota       QFileStatV
	BTimeLimit   int32
	ITimeLimit   int32
	RTBTimeLimit int32
	BWarnLimit   uint16
	IWarnLimit   uint16
	RTBWarnLimit uint16
	_            uint16
	_            uint32
	_            [7]uint64
}

// Values for StatV.Version and StatV.Flags.
const (
	StatVVersion    = 1      // FS_QSTATV_VERSION1
	StatPrjAcct     = 1 << 4 // FS_QUOTA_PDQ_ACCT
	StatPrjEnforced = 1 << 5 // FS_QUOTA_PDQ_ENFD
)

// Target is where commands go: a descriptor of any file inside the mount
// (quotactl_fd, Linux 5.14+) or, when Device is set, the block device of the
// mount (quotactl). DeviceTarget makes the device form with its path
// converted once; a literal Target{Device: ...} converts it on every call.
type Target struct {
	FD     int
	Device string
	dev    *byte // Device as a C string, made once by DeviceTarget
}

// DeviceTarget addresses the mount through its block device, for kernels
// without quotactl_fd. The path is converted to a C string here, not on
// each of the thousand calls an enumeration makes.
func DeviceTarget(device string) (Target, error) {
	dev, err := unix.BytePtrFromString(device)
	if err != nil {
		return Target{}, err
	}
	return Target{Device: device, dev: dev}, nil
}

// SyscallName names the syscall and command for error messages.
func (t *Target) SyscallName(cmd uint32) string {
	if t.Device != "" {
		return "quotactl(" + CmdName(cmd) + ", " + t.Device + ")"
	}
	return "quotactl_fd(" + CmdName(cmd) + ")"
}

// call is small enough to inline: an enumeration's thousand calls go
// straight to the syscall, as a bare loop of quotactl_fd would.
func (t *Target) call(cmd, typ, id uint32, addr unsafe.Pointer) error {
	if t.Device != "" {
		return t.callDevice(cmd, typ, id, addr)
	}
	_, _, errno := unix.Syscall6(unix.SYS_QUOTACTL_FD, uintptr(t.FD),
		uintptr(QCmd(cmd, typ)), uintptr(id), uintptr(addr), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func (t *Target) callDevice(cmd, typ, id uint32, addr unsafe.Pointer) error {
	dev := t.dev
	if dev == nil {
		var err error
		if dev, err = unix.BytePtrFromString(t.Device); err != nil {
			return err
		}
	}
	_, _, errno := unix.Syscall6(unix.SYS_QUOTACTL, uintptr(QCmd(cmd, typ)),
		uintptr(unsafe.Pointer(dev)), uintptr(id), uintptr(addr), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// GetQuota is Q_XGETQUOTA.
func (t *Target) GetQuota(typ, id uint32) (DiskQuota, error) {
	var q DiskQuota
	err := t.call(QXGetQuota, typ, id, unsafe.Pointer(&q))
	return q, err
}

// GetNextQuota is Q_XGETNEXTQUOTA: the first ID >= id that has a quota
// record, or ENOENT past the last. The answer goes into q, which the kernel
// overwrites whole, so an enumeration passes the same q for every ID.
func (t *Target) GetNextQuota(typ, id uint32, q *DiskQuota) error {
	return t.call(QXGetNextQuo, typ, id, unsafe.Pointer(q))
}

// SetQLim is Q_XSETQLIM; q.FieldMask says which fields apply.
func (t *Target) SetQLim(typ, id uint32, q DiskQuota) error {
	q.Version = DiskQuotaVersion
	q.ID = id
	return t.call(QXSetQLim, typ, id, unsafe.Pointer(&q))
}

// GetStatV is Q_XGETQSTATV: quota state of the filesystem.
func (t *Target) GetStatV(typ uint32) (StatV, error) {
	s := StatV{Version: StatVVersion}
	err := t.call(QXGetQStatV, typ, 0, unsafe.Pointer(&s))
	return s, err
}

// GetFmt is Q_GETFMT: the quota format in force for typ.
func (t *Target) GetFmt(typ uint32) (uint32, error) {
	var fmtID uint32
	err := t.call(QGetFmt, typ, 0, unsafe.Pointer(&fmtID))
	return fmtID, err
}
