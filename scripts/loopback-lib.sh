# loopback-lib.sh — what loopback-xfs.sh and loopback-ext4.sh share: their
# refusals, their checks for root, commands and loop devices, and umount.
# Sourced, never run; each script keeps its own usage (its own header).

prog=$(basename "$0")
die() { echo "$prog: $*" >&2; exit 1; }
need_root() { [ "$(id -u)" = 0 ] || die "must run as root (mounting and quota setup need it); try: sudo $prog $*"; }
need_cmd() { command -v "$1" >/dev/null 2>&1 || die "$1 not found; install it with: apt-get install $2"; }

need_loop() {
	if [ ! -e /dev/loop-control ] && ! ls /dev/loop[0-9]* >/dev/null 2>&1; then
		modprobe loop 2>/dev/null || true
	fi
	[ -e /dev/loop-control ] || ls /dev/loop[0-9]* >/dev/null 2>&1 ||
		die "no loop devices (/dev/loop-control missing); load the module with: modprobe loop (in a container, the host must pass loop devices in)"
}

# unmount_image MNT: the umount command of both scripts.
unmount_image() {
	need_root umount "$1"
	mountpoint -q "$1" || die "$1 is not a mount point"
	umount "$1" || die "umount $1 failed; is a process still using it? (fuser -vm $1)"
	echo "unmounted $1"
}
