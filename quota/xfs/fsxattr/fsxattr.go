// Package fsxattr wraps the FS_IOC_FSGETXATTR / FS_IOC_FSSETXATTR ioctls
// (linux/fs.h) that read and set an inode's project ID and inherit flag.
//
// It is the bottom layer: tiny, no policy, no path handling. It must never
// open or walk files itself; callers hand it a descriptor.
package fsxattr

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Attr mirrors struct fsxattr from linux/fs.h (28 bytes).
type Attr struct {
	XFlags     uint32 // fsx_xflags
	ExtSize    uint32 // fsx_extsize
	NExtents   uint32 // fsx_nextents
	ProjID     uint32 // fsx_projid
	CowExtSize uint32 // fsx_cowextsize
	_          [8]byte
}

// FlagProjInherit is FS_XFLAG_PROJINHERIT: new entries in a directory carrying
// it take the directory's project ID.
const FlagProjInherit = 0x00000200

// The generic Linux ioctl number encoding (asm-generic/ioctl.h).
const (
	iocNRBits   = 8
	iocTypeBits = 8
	iocSizeBits = 14
	iocNRShift  = 0
	iocTypeShft = iocNRShift + iocNRBits
	iocSizeShft = iocTypeShft + iocTypeBits
	iocDirShift = iocSizeShft + iocSizeBits
	iocWrite    = 1
	iocRead     = 2
)

func ioc(dir, typ, nr, size uintptr) uintptr {
	return dir<<iocDirShift | typ<<iocTypeShft | nr<<iocNRShift | size<<iocSizeShft
}

var (
	// IocGet is FS_IOC_FSGETXATTR, _IOR('X', 31, struct fsxattr).
	IocGet = ioc(iocRead, 'X', 31, unsafe.Sizeof(Attr{}))
	// IocSet is FS_IOC_FSSETXATTR, _IOW('X', 32, struct fsxattr).
	IocSet = ioc(iocWrite, 'X', 32, unsafe.Sizeof(Attr{}))
)

// Get reads the attributes of the open file fd.
func Get(fd int) (Attr, error) {
	var a Attr
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), IocGet, uintptr(unsafe.Pointer(&a))); errno != 0 {
		return Attr{}, errno
	}
	return a, nil
}

// Set writes the attributes of the open file fd.
func Set(fd int, a Attr) error {
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), IocSet, uintptr(unsafe.Pointer(&a))); errno != 0 {
		return errno
	}
	return nil
}
