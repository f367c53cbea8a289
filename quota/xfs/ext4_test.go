package xfs

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/quota"
)

// Limits ext4's quota file cannot hold are refused naming its maximum, per
// quota format; XFS has no bound below xfsq's own.
func TestCheckLimits(t *testing.T) {
	cases := []struct {
		name    string
		fs      *FS
		limits  quota.Limits
		refused string // "" when accepted
	}{
		{"xfs takes 8 EiB", &FS{kind: KindXFS}, quota.Limits{BytesHard: math.MaxInt64, InodesHard: math.MaxUint64}, ""},
		{"ext4 vfsv1 at its maximum", &FS{kind: KindExt4, max: ext4V1Max}, quota.Limits{BytesHard: math.MaxInt64 &^ 1023, InodesHard: math.MaxInt64}, ""},
		{"ext4 vfsv1 bytes above", &FS{kind: KindExt4, max: ext4V1Max}, quota.Limits{BytesHard: math.MaxInt64}, "bytes_hard"},
		{"ext4 vfsv1 soft bytes above", &FS{kind: KindExt4, max: ext4V1Max}, quota.Limits{BytesSoft: math.MaxInt64}, "bytes_soft"},
		{"ext4 vfsv1 inodes above", &FS{kind: KindExt4, max: ext4V1Max}, quota.Limits{InodesHard: math.MaxInt64 + 1}, "inodes_hard"},
		{"ext4 vfsv0 at 4 TiB less 1 KiB", &FS{kind: KindExt4, max: ext4V0Max}, quota.Limits{BytesHard: 4<<40 - 1024, InodesSoft: math.MaxUint32}, ""},
		{"ext4 vfsv0 bytes above", &FS{kind: KindExt4, max: ext4V0Max}, quota.Limits{BytesHard: 4 << 40}, "bytes_hard"},
		{"ext4 vfsv0 inodes above", &FS{kind: KindExt4, max: ext4V0Max}, quota.Limits{InodesSoft: math.MaxUint32 + 1}, "inodes_soft"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.fs.CheckLimits(c.limits)
			if c.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var tooLarge *LimitTooLargeError
			if !errors.As(err, &tooLarge) || tooLarge.Limit != c.refused || !strings.Contains(err.Error(), "above ext4's maximum of ") {
				t.Fatalf("%v, want a refusal of %s naming ext4's maximum", err, c.refused)
			}
		})
	}
}
