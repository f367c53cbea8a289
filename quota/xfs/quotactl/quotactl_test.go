package quotactl

import (
	"testing"
	"unsafe"
)

// Sizes and offsets as the kernel lays out the structs of linux/dqblk_xfs.h.
func TestABI(t *testing.T) {
	var q DiskQuota
	var s StatV
	cases := []struct {
		what      string
		got, want uintptr
	}{
		{"sizeof(fs_disk_quota)", unsafe.Sizeof(q), 112},
		{"d_id", unsafe.Offsetof(q.ID), 4},
		{"d_blk_hardlimit", unsafe.Offsetof(q.BlkHardLimit), 8},
		{"d_ino_softlimit", unsafe.Offsetof(q.InoSoftLimit), 32},
		{"d_bcount", unsafe.Offsetof(q.BCount), 40},
		{"d_icount", unsafe.Offsetof(q.ICount), 48},
		{"d_itimer", unsafe.Offsetof(q.ITimer), 56},
		{"d_btimer", unsafe.Offsetof(q.BTimer), 60},
		{"d_itimer_hi", unsafe.Offsetof(q.ITimerHi), 68},
		{"d_btimer_hi", unsafe.Offsetof(q.BTimerHi), 69},
		{"d_rtb_hardlimit", unsafe.Offsetof(q.RTBHardLimit), 72},
		{"d_rtbtimer", unsafe.Offsetof(q.RTBTimer), 96},
		{"d_rtbwarns", unsafe.Offsetof(q.RTBWarns), 100},
		{"sizeof(fs_qfilestatv)", unsafe.Sizeof(QFileStatV{}), 24},
		{"sizeof(fs_quota_statv)", unsafe.Sizeof(s), 160},
		{"qs_flags", unsafe.Offsetof(s.Flags), 2},
		{"qs_uquota", unsafe.Offsetof(s.UQuota), 8},
		{"qs_pquota", unsafe.Offsetof(s.PQuota), 56},
		{"qs_btimelimit", unsafe.Offsetof(s.BTimeLimit), 80},
		{"qs_bwarnlimit", unsafe.Offsetof(s.BWarnLimit), 92},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.what, c.got, c.want)
		}
	}
}

func TestCommands(t *testing.T) {
	cases := []struct {
		name      string
		got, want uint32
	}{
		{"Q_XGETQUOTA", QXGetQuota, 0x5803},
		{"Q_XSETQLIM", QXSetQLim, 0x5804},
		{"Q_XGETQSTATV", QXGetQStatV, 0x5808},
		{"Q_XGETNEXTQUOTA", QXGetNextQuo, 0x5809},
		{"QCMD(Q_XGETQUOTA, PRJQUOTA)", QCmd(QXGetQuota, PrjQuota), 0x580302},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}

func TestTimerJoin(t *testing.T) {
	q := DiskQuota{BTimer: -1, BTimerHi: 1}
	if got, want := q.BTimerSeconds(), int64(1)<<32|0xffffffff; got != want {
		t.Errorf("BTimerSeconds = %d, want %d", got, want)
	}
}
