#!/usr/bin/env bash
# loopback-xfs.sh — make and mount an XFS filesystem with project quotas from
# an image file, for installers trying xfsq and for tests.
#
#   loopback-xfs.sh create IMAGE SIZE [--any-kernel]
#                                            sparse image (SIZE as truncate: 300M, 2G; at least 300M);
#                                            --any-kernel: also where this kernel cannot enforce quotas
#   loopback-xfs.sh mount IMAGE MOUNTPOINT   loop mount with -o prjquota
#   loopback-xfs.sh umount MOUNTPOINT        unmount (the loop device is freed)
#   loopback-xfs.sh status MOUNTPOINT        device, options and project quota state
#
# It checks what it needs first and says exactly what is missing.
set -euo pipefail

. "$(dirname "$0")/loopback-lib.sh"
usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }


# What an operator can do about a kernel without XFS quota support.
quota_fix="boot a kernel built with CONFIG_XFS_QUOTA (Debian's stock kernel is), or run xfsq without kernel quotas: xfsq init --backend fallback (limits kept by xfsq itself)"
# /proc/fs/xfs/xqm exists exactly when XFS is built with CONFIG_XFS_QUOTA;
# the tests point XFSQ_LOOPBACK_XQM elsewhere to play either kind of kernel.
xqm=${XFSQ_LOOPBACK_XQM:-/proc/fs/xfs/xqm}


need_xfs_quota_kernel() {
	grep -qw xfs /proc/filesystems 2>/dev/null || modprobe xfs 2>/dev/null || true
	grep -qw xfs /proc/filesystems ||
		die "this kernel has no XFS support (xfs not in /proc/filesystems); load it with: modprobe xfs"
	[ -e "$xqm" ] ||
		die "this kernel ($(uname -r)) has XFS without quota support (CONFIG_XFS_QUOTA is off), so project quotas cannot be enforced here: $quota_fix${1:+; $1}"
}

cmd=${1:-}
case "$cmd" in
create)
	[ $# -eq 3 ] || { [ $# -eq 4 ] && [ "$4" = --any-kernel ]; } || usage
	image=$2 size=$3
	need_cmd mkfs.xfs xfsprogs
	# An image this kernel cannot mount with quotas is no use here: say so
	# before making it, unless it is meant for another kernel.
	[ "${4:-}" = --any-kernel ] || need_xfs_quota_kernel "to make the image for another kernel anyway: $prog create $image $size --any-kernel"
	[ -e "$image" ] && die "$image already exists; remove it first or pick another name"
	truncate -s "$size" "$image" || die "cannot create $image with size $size"
	bytes=$(stat -c %s "$image")
	if [ "$bytes" -lt $((300 * 1024 * 1024)) ]; then
		rm -f "$image"
		die "size $size is too small: mkfs.xfs needs at least 300M"
	fi
	if ! out=$(mkfs.xfs -q "$image" 2>&1); then
		rm -f "$image"
		die "mkfs.xfs failed: $out"
	fi
	echo "created $image ($size, sparse, XFS)"
	;;
mount)
	[ $# -eq 3 ] || usage
	image=$2 mnt=$3
	need_root "$@"
	[ -f "$image" ] || die "$image not found; make it with: $prog create $image 1G"
	need_loop
	need_xfs_quota_kernel
	mkdir -p "$mnt"
	if mountpoint -q "$mnt"; then die "$mnt is already a mount point; unmount it first: $prog umount $mnt"; fi
	if ! out=$(mount -o loop,prjquota "$image" "$mnt" 2>&1); then
		die "mount -o loop,prjquota $image $mnt failed: $out (see dmesg)"
	fi
	echo "mounted $image on $mnt with project quotas (prjquota)"
	;;
umount)
	[ $# -eq 2 ] || usage
	unmount_image "$2"
	;;
status)
	[ $# -eq 2 ] || usage
	mnt=$2
	mountpoint -q "$mnt" || die "$mnt is not a mount point"
	findmnt -no SOURCE,FSTYPE,OPTIONS --target "$mnt"
	if command -v xfs_quota >/dev/null 2>&1; then
		xfs_quota -x -c 'state -p' "$mnt"
	else
		echo "(install xfsprogs for the quota state)"
	fi
	;;
-h | --help | help) usage ;;
*) usage ;;
esac
