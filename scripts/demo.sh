#!/usr/bin/env bash
# demo.sh — a two-minute tour of xfsq's main job: two projects on one XFS
# filesystem, one fills its quota and gets "Disk quota exceeded" while its
# neighbour keeps writing; report, admission check and the journal.
#
#   scripts/demo.sh
#
# Where the kernel enforces XFS project quotas it uses a loopback image
# (needs root); elsewhere it boots the test kernel (Debian's stock kernel in
# QEMU: apt-get install xfsprogs qemu-system-x86 busybox-static, which it
# does itself as root); where no kernel can be booted it runs on a
# temporary directory with the fallback backend, and says why.
set -euo pipefail
cd "$(dirname "$0")/.."

tour() { # tour XFSQ ROOT
	local x=$1 root=$2
	step() { echo; echo "\$ xfsq $*"; "$x" --root "$root" "$@" || echo "(exit $?)"; }
	step init
	step project add omni --bytes-hard 20MiB
	step project add neighbour --bytes-hard 100MiB
	echo; echo "\$ write 40 MiB into projects/omni (its limit is 20 MiB)"
	dd if=/dev/zero of="$root/projects/omni/big" bs=1M count=40 status=none 2>&1 || true
	echo; echo "\$ write 30 MiB into projects/neighbour"
	dd if=/dev/zero of="$root/projects/neighbour/big" bs=1M count=30 status=none && echo "ok"
	# dd wrote behind xfsq's back: on the fallback backend only a walk sees
	# it, and reads walk only when asked (--refresh; XFS needs none).
	step report --refresh
	step project check neighbour --refresh
	step project check omni --refresh
	step events --limit 5
}

case "${1:-}" in
--inside) # inside the test kernel: $2 is the binary built on the host
	mnt=$(mktemp -d)
	mkfs.xfs -q -f "$XFSQ_KERNELTEST_DEVICE"
	mount -o prjquota "$XFSQ_KERNELTEST_DEVICE" "$mnt"
	echo "(inside the test kernel $(uname -r): XFS with prjquota on $XFSQ_KERNELTEST_DEVICE at $mnt)"
	tour "$2" "$mnt"
	umount "$mnt"
	exit 0
	;;
esac

work=$(mktemp -d)
trap 'mountpoint -q "$work/mnt" 2>/dev/null && umount "$work/mnt"; rm -rf "$work"' EXIT
scripts/deps.sh demo || echo "(going on without them)"
scripts/build-xfsq.sh "$work/xfsq"
fallback() { # fallback WHY
	echo "(no kernel with XFS project quotas: $1)" | fold -s -w 100 | head -2
	echo "(using the fallback backend on a temporary directory: nothing stops the oversized write below)"
	mkdir "$work/root"
	tour "$work/xfsq" "$work/root"
}
if [ "$(id -u)" = 0 ] && [ -e /proc/fs/xfs/xqm ] && command -v mkfs.xfs >/dev/null; then
	scripts/loopback-xfs.sh create "$work/xfs.img" 300M
	scripts/loopback-xfs.sh mount "$work/xfs.img" "$work/mnt"
	tour "$work/xfsq" "$work/mnt"
elif ! command -v mkfs.xfs >/dev/null; then
	fallback "mkfs.xfs is not installed (apt-get install xfsprogs)"
else
	echo "(this kernel cannot enforce XFS project quotas: booting the test kernel, about a minute the first time)"
	CGO_ENABLED=0 go build -o "$work/vmrun" ./internal/kerneltest/vmrun
	rc=0
	"$work/vmrun" -mem 1G /bin/bash "$PWD/scripts/demo.sh" --inside "$work/xfsq" 2>"$work/vmrun.err" || rc=$?
	if [ "$rc" = 125 ]; then
		fallback "$(grep -m1 '^vmrun: no route' "$work/vmrun.err" | sed 's/^vmrun: //')"
	else
		grep -m1 '^vmrun: kernel tests:' "$work/vmrun.err" | sed 's/^vmrun: kernel tests: /(route: /; s/$/)/' || true
		[ "$rc" = 0 ] || { cat "$work/vmrun.err" >&2; exit "$rc"; }
	fi
fi
