package fsxattr

import (
	"testing"
	"unsafe"
)

// The expected numbers are the kernel ABI as compiled from linux/fs.h on
// x86_64 and arm64 (both use the generic ioctl encoding).
func TestABI(t *testing.T) {
	if got := unsafe.Sizeof(Attr{}); got != 28 {
		t.Errorf("sizeof(struct fsxattr) = %d, want 28", got)
	}
	offsets := []struct {
		field string
		got   uintptr
		want  uintptr
	}{
		{"fsx_xflags", unsafe.Offsetof(Attr{}.XFlags), 0},
		{"fsx_extsize", unsafe.Offsetof(Attr{}.ExtSize), 4},
		{"fsx_nextents", unsafe.Offsetof(Attr{}.NExtents), 8},
		{"fsx_projid", unsafe.Offsetof(Attr{}.ProjID), 12},
		{"fsx_cowextsize", unsafe.Offsetof(Attr{}.CowExtSize), 16},
	}
	for _, o := range offsets {
		if o.got != o.want {
			t.Errorf("offsetof(%s) = %d, want %d", o.field, o.got, o.want)
		}
	}
	if IocGet != 0x801c581f {
		t.Errorf("FS_IOC_FSGETXATTR = %#x, want 0x801c581f", IocGet)
	}
	if IocSet != 0x401c5820 {
		t.Errorf("FS_IOC_FSSETXATTR = %#x, want 0x401c5820", IocSet)
	}
}
