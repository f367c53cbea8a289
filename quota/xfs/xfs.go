// Package xfs is the kernel-enforced quota backend: every managed tree gets a
// project ID and the kernel enforces its byte and inode limits — on XFS, and
// on ext4 made with the quota and project features and mounted with
// prjquota, which answers the same interface (Kind says which; ext4.go holds
// what differs).
//
// It speaks in trees, project IDs and limits; the fsxattr and quotactl
// packages below it speak in descriptors and structs. It must never follow a
// symlink, leave the filesystem it was opened on, or hand out project ID 0.
package xfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/quota/xfs/quotactl"
)

// basicBlock is the unit of XFS quota limits and counts.
const basicBlock = 512

const fixMount = "mount it with -o prjquota (scripts/loopback-xfs.sh mount does); " +
	"XFS cannot turn quota accounting on by remount"

// FS is one XFS filesystem with project quotas on, opened at a directory
// inside it. It is safe for concurrent use.
type FS struct {
	dir    string       // the directory FS was opened at
	kind   Kind         // which filesystem: the kernel interface is one, its limits and traps are not
	max    quota.Limits // the largest limits the filesystem holds; zero: no bound below xfsq's own
	handle *os.File     // kept open: quotactl_fd addresses the mount through it
	dev    uint64       // st_dev of the filesystem: walks never leave it
	mount  mountEntry
	target quotactl.Target
	// lastAll is how many IDs the last enumeration found: the next one
	// sizes its result for that many, as a scrape or report of 1,000
	// trees otherwise spends much of its time growing it.
	lastAll atomic.Int64
	// passes holds enumeration buffers (*[]quota.Quota) between WithAll
	// calls, so that a report or scrape of 1,000 trees does not allocate
	// and zero 72 KB every time, and concurrent ones do not share one.
	passes sync.Pool
}

var _ quota.Backend = (*FS)(nil)

// Open detects that dir is on XFS, or on ext4, with project quota
// accounting and enforcement on. Anything else is an *quota.UnsupportedError
// that says what is wrong and how to fix it.
func Open(dir string) (*FS, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil {
		return nil, &quota.OpError{Op: "open", Tree: dir, Syscall: "statfs", Err: err}
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return nil, &quota.OpError{Op: "open", Tree: dir, Syscall: "stat", Err: err}
	}
	m, mountErr := findMount(st.Dev)
	kind := KindXFS
	switch {
	case sfs.Type == unix.XFS_SUPER_MAGIC:
	case sfs.Type == unix.EXT4_SUPER_MAGIC && mountErr == nil && m.FSType == "ext4":
		kind = KindExt4
	default:
		fstype := fmt.Sprintf("filesystem type %#x", sfs.Type)
		if mountErr == nil {
			fstype = m.FSType
		}
		return nil, &quota.UnsupportedError{Path: dir, Short: fstype + ": no project quota",
			Reason: fstype + " is not XFS nor ext4, so the kernel cannot enforce project quotas here",
			Fix:    "put the sandbox root on XFS and " + fixMount + ", or on ext4 made for project quotas (" + fixExt4 + ")"}
	}
	if mountErr != nil {
		return nil, mountErr
	}
	h, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	fs := &FS{dir: dir, kind: kind, handle: h, dev: st.Dev, mount: m, target: quotactl.Target{FD: int(h.Fd())}}
	state, err := fs.target.GetStatV(quotactl.PrjQuota)
	if errors.Is(err, unix.ENOSYS) {
		// Kernels before 5.14 lack quotactl_fd; quotactl on the device works there.
		if fs.target, err = quotactl.DeviceTarget(m.Source); err != nil {
			h.Close()
			return nil, &quota.OpError{Op: "open", Tree: dir, Syscall: "quotactl", Err: err}
		}
		state, err = fs.target.GetStatV(quotactl.PrjQuota)
	}
	if err == nil {
		err = fs.checkState(state)
	} else if errors.Is(err, unix.ENOSYS) {
		err = fs.noQuotaOperations()
	} else {
		err = &quota.OpError{Op: "read quota state of", Tree: m.MountPoint,
			Syscall: fs.target.SyscallName(quotactl.QXGetQStatV), Err: err}
	}
	if err == nil && kind == KindExt4 {
		err = fs.readExt4Format()
	}
	if err != nil {
		h.Close()
		return nil, err
	}
	return fs, nil
}

// noQuotaOperations says why the filesystem has no quota operations at all.
func (fs *FS) noQuotaOperations() error {
	m := fs.mount
	if fs.kind == KindExt4 {
		return &quota.UnsupportedError{Path: fs.dir, Short: "ext4: kernel without quota support",
			Reason: "ext4 is not XFS, and this kernel has no quota support for it (CONFIG_QUOTA is off)",
			Fix: "run on a kernel built with CONFIG_QUOTA and CONFIG_QFMT_V2, as Debian's stock kernel is, and there " + fixExt4 +
				"; or put the root on XFS and " + fixMount}
	}
	// XFS mounted without quota options has no quota operations at
	// all, so ENOSYS there is the mount's doing, not the kernel's.
	if !m.projectQuotaOption {
		return &quota.UnsupportedError{Path: fs.dir, Short: "xfs: mounted without prjquota",
			Reason: "XFS on " + m.Source + " at " + m.MountPoint + " is mounted without project quota accounting",
			Fix: fixMount + " (if that mount fails with \"quota support not available\", " +
				"the kernel lacks CONFIG_XFS_QUOTA: run on one built with it, as Debian's stock kernel is)"}
	}
	return &quota.UnsupportedError{Path: fs.dir, Short: "xfs: kernel without quota support",
		Reason: "this kernel has no XFS quota support (CONFIG_XFS_QUOTA is off)",
		Fix:    "run on a kernel built with CONFIG_XFS_QUOTA, as Debian's stock kernel is (the tests boot one in QEMU: docs/testing.md)"}
}

// checkState refuses a mount whose project quotas are not both accounted
// and enforced.
func (fs *FS) checkState(statv quotactl.StatV) error {
	state := statv.Flags
	m := fs.mount
	if fs.kind == KindExt4 {
		switch {
		case state&quotactl.StatPrjAcct == 0:
			return &quota.UnsupportedError{Path: fs.dir, Short: "ext4: no project quota",
				Reason: "ext4 is not XFS, and ext4 on " + m.Source + " at " + m.MountPoint +
					" keeps no project quotas (its quota and project features are off, or it is mounted without prjquota)",
				Fix: fixExt4 + "; or put the root on XFS and " + fixMount}
		case state&quotactl.StatPrjEnforced == 0:
			return &quota.UnsupportedError{Path: fs.dir, Short: "ext4: project quota not enforced",
				Reason: "ext4 on " + m.Source + " at " + m.MountPoint + " accounts project quotas but does not enforce them (mounted without prjquota)",
				Fix:    "mount it with -o prjquota (scripts/loopback-ext4.sh mount does)"}
		}
		return nil
	}
	switch {
	case state&quotactl.StatPrjAcct == 0:
		return &quota.UnsupportedError{Path: fs.dir, Short: "xfs: mounted without prjquota",
			Reason: "XFS on " + m.Source + " at " + m.MountPoint + " is mounted without project quota accounting",
			Fix:    fixMount}
	case state&quotactl.StatPrjEnforced == 0:
		return &quota.UnsupportedError{Path: fs.dir, Short: "xfs: project quota not enforced",
			Reason: "XFS on " + m.Source + " at " + m.MountPoint + " accounts project quotas but does not enforce them (pqnoenforce)",
			Fix:    "mount it with -o prjquota instead of pqnoenforce"}
	}
	return nil
}

// Close releases the descriptor that addresses the mount.
func (fs *FS) Close() error { return fs.handle.Close() }

// Name is the backend name shown in every output: "xfs" or "ext4".
func (fs *FS) Name() string { return string(fs.kind) }

// Kind is the filesystem the FS is on.
func (fs *FS) Kind() Kind { return fs.kind }

// MountPoint and Device name the mount the FS lives on.
func (fs *FS) MountPoint() string { return fs.mount.MountPoint }
func (fs *FS) Device() string     { return fs.mount.Source }

// SetLimits replaces the limits of id. Bytes are rounded up to the 512-byte
// basic blocks the kernel stores.
func (fs *FS) SetLimits(id quota.ProjectID, l quota.Limits) error {
	if id == 0 {
		return &quota.OpError{Op: "set limits", ID: id, Err: errors.New("project ID 0 holds the defaults for every ID; refusing to set it")}
	}
	if err := fs.CheckLimits(l); err != nil {
		return &quota.OpError{Op: "set limits on", Tree: fs.mount.MountPoint, ID: id, Err: err}
	}
	q := quotactl.DiskQuota{
		Flags:        quotactl.FlagProjQuota,
		FieldMask:    quotactl.FieldLimits,
		BlkSoftLimit: toBlocks(l.BytesSoft),
		BlkHardLimit: toBlocks(l.BytesHard),
		InoSoftLimit: l.InodesSoft,
		InoHardLimit: l.InodesHard,
	}
	if err := fs.target.SetQLim(quotactl.PrjQuota, uint32(id), q); err != nil {
		return &quota.OpError{Op: "set limits on", Tree: fs.mount.MountPoint, ID: id,
			Syscall: fs.target.SyscallName(quotactl.QXSetQLim), Err: err}
	}
	return nil
}

// SetGrace sets how long usage may stay over a soft limit before the kernel
// enforces it. XFS keeps one grace period per filesystem (on ID 0); for ext4
// the kernel takes the same call as the quota file's grace periods.
func (fs *FS) SetGrace(bytes, inodes time.Duration) error {
	q := quotactl.DiskQuota{
		Flags:     quotactl.FlagProjQuota,
		FieldMask: quotactl.FieldBTimer | quotactl.FieldITimer,
		BTimer:    int32(bytes / time.Second),
		ITimer:    int32(inodes / time.Second),
	}
	if err := fs.target.SetQLim(quotactl.PrjQuota, 0, q); err != nil {
		return &quota.OpError{Op: "set grace on", Tree: fs.mount.MountPoint,
			Syscall: fs.target.SyscallName(quotactl.QXSetQLim), Err: err}
	}
	return nil
}

// Grace reads the filesystem's grace periods (ID 0's timers on XFS, the
// quota file's on ext4); zero is the kernel's default, 7 days.
func (fs *FS) Grace() (bytes, inodes time.Duration, err error) {
	if fs.kind == KindExt4 {
		// ID 0 is an ordinary ID to the generic quota layer; the grace
		// periods are the quota file's, which the state answer carries.
		st, err := fs.target.GetStatV(quotactl.PrjQuota)
		if err != nil {
			return 0, 0, &quota.OpError{Op: "read grace of", Tree: fs.mount.MountPoint,
				Syscall: fs.target.SyscallName(quotactl.QXGetQStatV), Err: err}
		}
		return time.Duration(st.BTimeLimit) * time.Second, time.Duration(st.ITimeLimit) * time.Second, nil
	}
	q, err := fs.target.GetQuota(quotactl.PrjQuota, 0)
	if errors.Is(err, unix.ENOENT) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, &quota.OpError{Op: "read grace of", Tree: fs.mount.MountPoint,
			Syscall: fs.target.SyscallName(quotactl.QXGetQuota), Err: err}
	}
	return time.Duration(q.BTimer) * time.Second, time.Duration(q.ITimer) * time.Second, nil
}

// Get reads limits and usage of id; an ID the kernel has no record of reads
// as zero.
func (fs *FS) Get(id quota.ProjectID) (quota.Quota, error) {
	q, err := fs.target.GetQuota(quotactl.PrjQuota, uint32(id))
	if errors.Is(err, unix.ENOENT) {
		return quota.Quota{ID: id}, nil
	}
	if err != nil {
		return quota.Quota{}, &quota.OpError{Op: "read quota of", Tree: fs.mount.MountPoint, ID: id,
			Syscall: fs.target.SyscallName(quotactl.QXGetQuota), Err: err}
	}
	return fromDisk(id, &q), nil
}

// All enumerates every project ID with usage or limits, keyed for lookups
// (allocation, doctor). ID 0, which holds the defaults, is left out.
// Callers that only range over the IDs should use WithAll or AppendAll:
// the map inserts cost more than the kernel's own lookups.
func (fs *FS) All() (map[quota.ProjectID]quota.Quota, error) {
	list, err := fs.AppendAll(nil)
	if err != nil {
		return nil, err
	}
	out := make(map[quota.ProjectID]quota.Quota, len(list))
	for _, q := range list {
		out[q.ID] = q
	}
	return out, nil
}

// AppendAll appends every project ID with usage or limits to dst, in
// ascending ID order (the order Q_XGETNEXTQUOTA answers in), in one pass;
// ID 0 is left out. A nil dst is sized for as many IDs as the last
// enumeration found (or ExpectIDs said). On success the result is never
// nil. Per ID it does no more than the syscall into one reused buffer and
// a conversion of the answer into place, allocating nothing; the result holds no pointer
// (quota.Instant), so the collector never scans it. An enumeration of
// 1,000 trees costs little more than the 1,000 syscalls it has to make.
func (fs *FS) AppendAll(dst []quota.Quota) ([]quota.Quota, error) {
	if dst == nil {
		dst = make([]quota.Quota, 0, fs.lastAll.Load())
	}
	start := len(dst)
	var q quotactl.DiskQuota // the kernel overwrites it whole on every call
	for next := uint32(1); ; {
		if err := fs.target.GetNextQuota(quotactl.PrjQuota, next, &q); err != nil {
			if errors.Is(err, unix.ENOENT) { // past the last ID: once per pass
				break
			}
			return nil, &quota.OpError{Op: "enumerate project quotas on", Tree: fs.mount.MountPoint,
				ID: quota.ProjectID(next), Syscall: fs.target.SyscallName(quotactl.QXGetNextQuo), Err: err}
		}
		if len(dst) == cap(dst) {
			dst = slices.Grow(dst, 1)
		}
		dst = dst[:len(dst)+1]
		fillFromDisk(&dst[len(dst)-1], &q)
		if e := &dst[len(dst)-1]; e.Limits == (quota.Limits{}) && !e.OwnsData() {
			// ext4's quota file keeps an ID's record after its limits
			// were cleared and its data went, and the kernel answers
			// it; an ID with neither is no one's (XFS skips it itself).
			dst = dst[:len(dst)-1]
		}
		if q.ID == ^uint32(0) {
			break
		}
		next = q.ID + 1
	}
	fs.lastAll.Store(int64(len(dst) - start))
	return dst, nil
}

// ExpectIDs sizes the first enumeration's result for about n IDs, when no
// enumeration has run yet: a report knows how many trees it will join, and
// a one-shot process would otherwise grow its only result from nothing.
func (fs *FS) ExpectIDs(n int) { fs.lastAll.CompareAndSwap(0, int64(n)) }

// WithAll enumerates as AppendAll does, into a buffer kept from an earlier
// pass, and hands the entries to fn, which must not keep them (nor any
// subslice) past its return: the next pass overwrites them. Callers that
// read the figures once and copy what they need (a report, a scrape) use it,
// so a long-lived server's passes allocate nothing. fn's error is returned
// as it is; fn is not called when the enumeration fails. all is never nil.
func (fs *FS) WithAll(fn func(all []quota.Quota) error) error {
	buf, _ := fs.passes.Get().(*[]quota.Quota)
	if buf == nil {
		buf = new([]quota.Quota)
	}
	all, err := fs.AppendAll((*buf)[:0])
	if err != nil {
		fs.passes.Put(buf)
		return err
	}
	*buf = all
	defer fs.passes.Put(buf) // after fn, even if it panics: nothing else holds it
	return fn(all)
}

// Clear zeroes the limits of id. Usage stays with the ID until its files are
// gone; an ID that still owns data is never released (WaitEmpty tells). Clearing an ID the
// kernel does not know is a success.
func (fs *FS) Clear(id quota.ProjectID) error {
	q, err := fs.Get(id)
	if err != nil {
		return err
	}
	if q.Limits == (quota.Limits{}) {
		return nil
	}
	return fs.SetLimits(id, quota.Limits{})
}

func toBlocks(bytes uint64) uint64 { return (bytes + basicBlock - 1) / basicBlock }

func fromDisk(id quota.ProjectID, q *quotactl.DiskQuota) quota.Quota {
	var out quota.Quota
	fillFromDisk(&out, q)
	out.ID = id
	return out
}

// fillFromDisk converts the kernel's answer in place: an enumeration
// writes straight into its result instead of copying a Quota per ID. It sets
// every field (dst may hold a previous pass's entries). A timer of 0, no
// grace running, is the zero Instant: no time.Time is built per ID.
func fillFromDisk(out *quota.Quota, q *quotactl.DiskQuota) {
	out.ID = quota.ProjectID(q.ID)
	out.Limits = quota.Limits{
		BytesSoft:  q.BlkSoftLimit * basicBlock,
		BytesHard:  q.BlkHardLimit * basicBlock,
		InodesSoft: q.InoSoftLimit,
		InodesHard: q.InoHardLimit,
	}
	out.Bytes = q.BCount * basicBlock
	out.Inodes = q.ICount
	out.BytesGraceEnds = quota.InstantOfUnix(q.BTimerSeconds())
	out.InodesGraceEnds = quota.InstantOfUnix(q.ITimerSeconds())
}
