#!/usr/bin/env bash
# demo.sh — a tour of xfsq's main job: two projects on one XFS (or ext4)
# filesystem, one fills its quota and its write fails (XFS project quotas
# answer "No space left on device", ext4's "Disk quota exceeded") while its
# neighbour keeps writing; report, admission check, a sweep that journals
# the limit reached, the journal. About 4 minutes the first time on a fresh
# machine (packages, Debian's kernel, its first boot under emulation),
# about 2 after; it says what it is doing at each step.
#
#   scripts/demo.sh [--fs xfs|ext4]     default xfs
#
# Where the kernel enforces the filesystem's project quotas it uses a
# loopback image (needs root; scripts/loopback-xfs.sh, loopback-ext4.sh);
# elsewhere it boots the test kernel (Debian's stock kernel in QEMU:
# apt-get install xfsprogs qemu-system-x86 busybox-static, which it does
# itself as root); where no kernel can be booted it runs on a temporary
# directory with the fallback backend, and says why. On ext4 the oversized
# write runs without CAP_SYS_RESOURCE, as a container's process does: a
# writer holding it (root, by default) bypasses ext4's project limits.
set -euo pipefail
cd "$(dirname "$0")/.."

# say prints what the demo is doing now, so that no step is silent.
say() { echo "==> $*"; }

tour() { # tour XFSQ ROOT FS
	local x=$1 root=$2 fs=$3
	step() { echo; echo "\$ xfsq $*"; "$x" --root "$root" "$@" || echo "(exit $?)"; }
	step init
	step project add omni --bytes-hard 20MiB --bytes-soft 16MiB
	step project add neighbour --bytes-hard 100MiB
	echo; echo "\$ write 40 MiB into projects/omni (its limit is 20 MiB)"
	local as=()
	if [ "$fs" = ext4 ]; then
		# As a container's process: on ext4 (the kernel's generic quota
		# code) CAP_SYS_RESOURCE bypasses hard limits, and Docker drops it.
		echo "(as a container's process: without CAP_SYS_RESOURCE, which on ext4 would let the write past the limit)"
		as=(setpriv --bounding-set=-sys_resource --inh-caps=-sys_resource --)
	fi
	if ! "${as[@]}" dd if=/dev/zero of="$root/projects/omni/big" bs=1M count=40 status=none 2>"$root/.dd.err"; then
		cat "$root/.dd.err"
		grep -q 'No space left on device' "$root/.dd.err" &&
			echo "(the kernel stopped the write at omni's 20 MiB: XFS project quotas report a full quota as \"No space left on device\", ENOSPC, not \"Disk quota exceeded\")"
		grep -q 'Disk quota exceeded' "$root/.dd.err" &&
			echo "(the kernel stopped the write at omni's 20 MiB: ext4 project quotas report a full quota as \"Disk quota exceeded\", EDQUOT)"
	fi
	rm -f "$root/.dd.err"
	echo; echo "\$ write 30 MiB into projects/neighbour"
	dd if=/dev/zero of="$root/projects/neighbour/big" bs=1M count=30 status=none && echo "ok"
	# dd wrote behind xfsq's back: on the fallback backend only a walk sees
	# it, and reads walk only when asked (--refresh; XFS needs none).
	step report --refresh
	step project check neighbour --refresh
	step project check omni --refresh
	echo; echo "(a sweep journals every tree over its soft limit before it deletes anything; nothing here is old enough to delete)"
	step sweep omni
	step events --limit 6
}

next_steps() {
	cat <<'NEXT'

==> Next steps
  - The dashboard and the HTTP API: make a token file and run xfsq serve, then open
    http://127.0.0.1:9742/ (docs/api.md, docs/operations.md):
      printf '%s,me,operator\n' "$(openssl rand -hex 16)" > tokens.csv && chmod 600 tokens.csv
      xfsq --root ROOT serve --token-file tokens.csv
  - Install on a host with a real XFS root: README.md, "Installing on a host".
  - Every command: docs/cli.md; the tests: scripts/test.sh (docs/testing.md).
NEXT
}

fs=xfs
case "${1:-}" in
--inside) # inside the test kernel: $2 is the binary built on the host, $3 the filesystem
	mnt=$(mktemp -d)
	if [ "${3:-xfs}" = ext4 ]; then
		mkfs.ext4 -q -F -O quota,project "$XFSQ_KERNELTEST_DEVICE"
		mount -t ext4 -o prjquota "$XFSQ_KERNELTEST_DEVICE" "$mnt"
		echo "(inside the test kernel $(uname -r): ext4 (quota,project) with prjquota on $XFSQ_KERNELTEST_DEVICE at $mnt)"
	else
		mkfs.xfs -q -f "$XFSQ_KERNELTEST_DEVICE"
		mount -o prjquota "$XFSQ_KERNELTEST_DEVICE" "$mnt"
		echo "(inside the test kernel $(uname -r): XFS with prjquota on $XFSQ_KERNELTEST_DEVICE at $mnt)"
	fi
	tour "$2" "$mnt" "${3:-xfs}"
	umount "$mnt"
	exit 0
	;;
--fs) fs=${2:-} ;;
--fs=*) fs=${1#--fs=} ;;
"") ;;
*) echo "usage: scripts/demo.sh [--fs xfs|ext4]" >&2; exit 2 ;;
esac
case "$fs" in
xfs) FS=XFS ;;
ext4) FS=ext4 ;;
*) echo "demo: --fs ${fs:-(none)}: use xfs or ext4" >&2; exit 2 ;;
esac

work=$(mktemp -d)
trap 'mountpoint -q "$work/mnt" 2>/dev/null && umount "$work/mnt"; rm -rf "$work"' EXIT
say "[1/3] checking the Debian packages the demo needs (xfsprogs, qemu-system-x86, busybox-static; installed as root when missing)"
scripts/deps.sh demo || echo "(going on without them)"
say "[2/3] building xfsq"
scripts/build-xfsq.sh "$work/xfsq" >/dev/null
fallback() { # fallback WHY
	echo "(no kernel with $FS project quotas: $1)" | fold -s -w 100 | head -2
	echo "(using the fallback backend on a temporary directory: nothing stops the oversized write below)"
	mkdir "$work/root"
	say "[3/3] the tour, on the fallback backend"
	tour "$work/xfsq" "$work/root" "$fs"
}
# ticker prints how long a silent step has taken, every 30 s, until killed.
ticker() { local what=$1 t=0; while sleep 30; do t=$((t + 30)); echo "    ... $what ($t s)"; done; }
# native_ext4 mounts a loopback ext4 image with project quotas where this
# kernel can (loopback-ext4.sh checks each trap); false, quietly, if not.
native_ext4() {
	[ "$(id -u)" = 0 ] && command -v mkfs.ext4 >/dev/null || return 1
	scripts/loopback-ext4.sh create "$work/ext4.img" 300M >/dev/null 2>&1 || return 1
	scripts/loopback-ext4.sh mount "$work/ext4.img" "$work/mnt" >"$work/mount.out" 2>&1 || {
		echo "(no loopback ext4 here: $(tail -1 "$work/mount.out" | sed 's/^loopback-ext4.sh: //'))" | fold -s -w 100 | head -2 | sed 's/^/    /'
		return 1
	}
}
mkfs=mkfs.xfs pkg=xfsprogs
[ "$fs" = ext4 ] && mkfs=mkfs.ext4 pkg=e2fsprogs
if [ "$fs" = xfs ] && [ "$(id -u)" = 0 ] && [ -e /proc/fs/xfs/xqm ] && command -v mkfs.xfs >/dev/null; then
	say "[3/3] this kernel enforces XFS project quotas: the tour runs on a loopback XFS image"
	scripts/loopback-xfs.sh create "$work/xfs.img" 300M
	scripts/loopback-xfs.sh mount "$work/xfs.img" "$work/mnt"
	tour "$work/xfsq" "$work/mnt" xfs
elif [ "$fs" = ext4 ] && native_ext4; then
	say "[3/3] this kernel enforces ext4 project quotas: the tour runs on a loopback ext4 image"
	tour "$work/xfsq" "$work/mnt" ext4
elif ! command -v "$mkfs" >/dev/null; then
	fallback "$mkfs is not installed (apt-get install $pkg)"
else
	cache=${XFSQ_KERNELTEST_CACHE:-$HOME/.cache/xfsq/kerneltest}
	if ls "$cache"/*/vmlinuz* >/dev/null 2>&1 || ls "$cache"/vmlinuz* >/dev/null 2>&1; then
		fetch="Debian's kernel is cached in $cache"
	else
		fetch="first it downloads Debian's stock kernel (apt-get download, once: it is kept in $cache)"
	fi
	if [ "$fs" = xfs ]; then
		say "[3/3] this kernel cannot enforce XFS project quotas (CONFIG_XFS_QUOTA is off): the tour runs inside Debian's kernel in QEMU"
	else
		say "[3/3] this kernel cannot enforce ext4 project quotas: the tour runs inside Debian's kernel in QEMU"
	fi
	echo "    $fetch; booting it under software emulation takes one to two minutes, then the tour's output appears at once"
	CGO_ENABLED=0 go build -o "$work/vmrun" ./internal/testsupport/kerneltest/vmrun
	rc=0
	ticker "still preparing and booting the test kernel" &
	tick=$!
	"$work/vmrun" -mem 1G /bin/bash "$PWD/scripts/demo.sh" --inside "$work/xfsq" "$fs" >"$work/vmrun.out" 2>"$work/vmrun.err" || rc=$?
	kill "$tick" 2>/dev/null; wait "$tick" 2>/dev/null || true
	if [ "$rc" = 125 ]; then
		cat "$work/vmrun.out"
		fallback "$(grep -m1 '^vmrun: no route' "$work/vmrun.err" | sed 's/^vmrun: //')"
	else
		cat "$work/vmrun.out"
		grep -m1 '^vmrun: kernel tests:' "$work/vmrun.err" | sed 's/^vmrun: kernel tests: /(route: /; s/$/)/' || true
		[ "$rc" = 0 ] || { cat "$work/vmrun.err" >&2; exit "$rc"; }
	fi
fi
next_steps
