#!/usr/bin/env bash
# loopback-ext4.sh — make and mount an ext4 filesystem with project quotas
# from an image file, checking each trap on the way and naming its fix.
#
#   loopback-ext4.sh create IMAGE SIZE        sparse image with the quota and project features (SIZE as truncate: 300M, 2G)
#   loopback-ext4.sh enable IMAGE             turn the features on in an existing, unmounted ext4 image or device
#   loopback-ext4.sh mount IMAGE MOUNTPOINT   loop mount with -o prjquota
#   loopback-ext4.sh umount MOUNTPOINT        unmount (the loop device is freed)
#   loopback-ext4.sh status MOUNTPOINT        device, options, project quota state and the largest limit
#   loopback-ext4.sh check-limit SIZE         whether ext4 can hold a project limit of SIZE (e.g. 10T)
#
# On ext4 a writer holding CAP_SYS_RESOURCE (root, unless it drops it, as
# Docker's containers do) bypasses project limits; XFS binds root too.
set -euo pipefail

. "$(dirname "$0")/loopback-lib.sh"
usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }


vm_route="Debian's stock kernel in a VM can (CONFIG_QFMT_V2=m): apt-get install qemu-system-x86 busybox-static, then see docs/testing.md for how xfsq's tests boot it"

# ext4's largest project limit: the quota format mkfs.ext4 -O quota writes
# (vfsv1) keeps 64-bit limits in 1 KiB blocks, bounded by the kernel's
# signed 64-bit byte count.
max_limit_bytes=$(( (1 << 62) + ((1 << 62) - 1024) ))
max_limit_text="8 EiB less 1 KiB ($max_limit_bytes bytes)"

# e2fsprogs before 1.43 has no project feature.
need_e2fsprogs() {
	need_cmd mke2fs e2fsprogs
	local v
	v=$(mke2fs -V 2>&1 | sed -n 's/^mke2fs \([0-9][0-9.]*\).*/\1/p' | head -1)
	[ -n "$v" ] || die "cannot tell the e2fsprogs version (mke2fs -V said: $(mke2fs -V 2>&1 | head -1))"
	local major minor
	major=${v%%.*} minor=${v#*.} minor=${minor%%.*}
	if [ "$major" -lt 1 ] || { [ "$major" -eq 1 ] && [ "$minor" -lt 43 ]; }; then
		die "e2fsprogs $v is older than 1.43, which has no project quota feature; upgrade e2fsprogs (Debian 10 and later ship it)"
	fi
}

# The features can only be turned on while the filesystem is unmounted.
need_unmounted() {
	local image=$1
	if findmnt -rno TARGET --source "$image" >/dev/null 2>&1; then
		die "$image is mounted at $(findmnt -rno TARGET --source "$image" | head -1); the quota and project features can only be turned on while it is unmounted: unmount it first ($prog umount MOUNTPOINT)"
	fi
	if command -v losetup >/dev/null 2>&1 && [ -n "$(losetup -j "$image" 2>/dev/null)" ]; then
		local dev
		dev=$(losetup -j "$image" | cut -d: -f1 | head -1)
		if findmnt -rno TARGET --source "$dev" >/dev/null 2>&1; then
			die "$image is mounted through $dev at $(findmnt -rno TARGET --source "$dev" | head -1); the quota and project features can only be turned on while it is unmounted: unmount it first ($prog umount MOUNTPOINT)"
		fi
	fi
}

has_features() {
	dumpe2fs -h "$1" 2>/dev/null | grep -i '^Filesystem features:' | grep -qw quota &&
		dumpe2fs -h "$1" 2>/dev/null | grep -i '^Filesystem features:' | grep -qw project
}


# The quota feature keeps quotas in the vfsv1 format: without
# CONFIG_QFMT_V2 the kernel cannot mount an image that has it at all.
need_quota_kernel() {
	grep -qw ext4 /proc/filesystems 2>/dev/null || modprobe ext4 2>/dev/null || true
	grep -qw ext4 /proc/filesystems || die "this kernel has no ext4 support (ext4 not in /proc/filesystems); load it with: modprobe ext4"
	local rel
	rel=$(uname -r)
	grep -qw quota_v2 /proc/modules 2>/dev/null && return 0
	grep -q '/quota_v2.ko' "/lib/modules/$rel/modules.builtin" 2>/dev/null && return 0
	modprobe quota_v2 2>/dev/null && return 0
	grep -qx 'CONFIG_QFMT_V2=y' "/boot/config-$rel" 2>/dev/null && return 0
	die "this kernel ($rel) has no quota format support for ext4 (CONFIG_QFMT_V2, module quota_v2), so an image with the quota feature cannot be mounted here; run on a kernel built with it, or $vm_route"
}

size_bytes() {
	local s=${1,,} mult=1
	case "$s" in
	*k | *kib) mult=1024 ;; *m | *mib) mult=$((1 << 20)) ;; *g | *gib) mult=$((1 << 30)) ;;
	*t | *tib) mult=$((1 << 40)) ;; *p | *pib) mult=$((1 << 50)) ;; *e | *eib) mult=$((1 << 60)) ;;
	esac
	s=${s%ib}; s=${s%[kmgtpe]}
	[[ "$s" =~ ^[0-9]+$ ]] || die "$1 is not a size (e.g. 500G, 10T)"
	# Above what bash's 64-bit arithmetic holds is above ext4's maximum too.
	if [ ${#s} -gt 19 ] || [ "$s" -gt $(( max_limit_bytes / mult )) ]; then
		echo overflow
		return
	fi
	echo $((s * mult))
}

cmd=${1:-}
case "$cmd" in
create)
	[ $# -eq 3 ] || usage
	image=$2 size=$3
	need_e2fsprogs
	[ -e "$image" ] && die "$image already exists; remove it first or pick another name (or turn the features on in it: $prog enable $image)"
	truncate -s "$size" "$image" || die "cannot create $image with size $size"
	if ! out=$(mkfs.ext4 -q -F -O quota,project "$image" 2>&1); then
		rm -f "$image"
		die "mkfs.ext4 -O quota,project failed: $out"
	fi
	echo "created $image ($size, sparse, ext4 with the quota and project features)"
	;;
enable)
	[ $# -eq 2 ] || usage
	image=$2
	need_e2fsprogs
	[ -e "$image" ] || die "$image not found"
	dumpe2fs -h "$image" >/dev/null 2>&1 || die "$image holds no ext2/3/4 filesystem"
	need_unmounted "$image"
	if has_features "$image"; then
		echo "$image has the quota and project features already"
		exit 0
	fi
	inode_size=$(dumpe2fs -h "$image" 2>/dev/null | sed -n 's/^Inode size:[[:space:]]*//p')
	if [ -n "$inode_size" ] && [ "$inode_size" -lt 256 ]; then
		die "$image has $inode_size-byte inodes, which have no room for a project ID; the filesystem must be made again with larger ones: mkfs.ext4 -I 256 -O quota,project (after saving its data)"
	fi
	if ! out=$(tune2fs -O quota,project "$image" 2>&1); then
		die "tune2fs -O quota,project $image failed: $out"
	fi
	echo "turned on the quota and project features in $image; mount it with: $prog mount $image MOUNTPOINT"
	;;
mount)
	[ $# -eq 3 ] || usage
	image=$2 mnt=$3
	need_root "$@"
	[ -f "$image" ] || die "$image not found; make it with: $prog create $image 1G"
	need_cmd dumpe2fs e2fsprogs
	has_features "$image" || die "$image lacks the quota and project features; turn them on while it is unmounted: $prog enable $image"
	need_loop
	need_quota_kernel
	mkdir -p "$mnt"
	if mountpoint -q "$mnt"; then die "$mnt is already a mount point; unmount it first: $prog umount $mnt"; fi
	if ! out=$(mount -t ext4 -o loop,prjquota "$image" "$mnt" 2>&1); then
		die "mount -t ext4 -o loop,prjquota $image $mnt failed: $out (see dmesg)"
	fi
	echo "mounted $image on $mnt with project quotas (prjquota); writers holding CAP_SYS_RESOURCE bypass them on ext4"
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
		xfs_quota -f -x -c 'state -p' "$mnt"
	elif command -v repquota >/dev/null 2>&1; then
		repquota -P "$mnt"
	else
		echo "(install xfsprogs or quota for the quota state)"
	fi
	echo "largest project limit on ext4: $max_limit_text"
	;;
check-limit)
	[ $# -eq 2 ] || usage
	bytes=$(size_bytes "$2")
	if [ "$bytes" = overflow ] || [ "$bytes" -gt "$max_limit_bytes" ]; then
		die "$2 is above ext4's largest project limit, $max_limit_text; give a smaller limit, or put the root on XFS"
	fi
	echo "$2 ($bytes bytes) fits ext4's largest project limit, $max_limit_text"
	;;
-h | --help | help) usage ;;
*) usage ;;
esac
