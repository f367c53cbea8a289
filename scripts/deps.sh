#!/usr/bin/env bash
# deps.sh — the Debian packages xfsq's tests and demo need, installed when
# missing: as root with apt-get (after apt-get update), otherwise named.
#
#   scripts/deps.sh test    everything `scripts/test.sh` uses
#   scripts/deps.sh demo    what `scripts/demo.sh` uses to show real XFS quotas
#
# Exit 0 when everything is there (or was installed), 1 when something is
# missing and could not be installed (the message names it).
set -euo pipefail

# xfsprogs: mkfs.xfs and xfs_quota. qemu-system-x86 + busybox-static: the
# kernel tests boot Debian's stock kernel (linux-image-amd64, fetched with
# apt-get download, never installed) where the host kernel cannot enforce
# XFS quotas. git: the sweep's git-index tests make their fixtures with it
# (xfsq itself never runs git). postgresql: the store tests' second driver.
# prometheus: promtool checks the /metrics output and the contrib/ alert
# rules, and the metrics tests start a real Prometheus server to scrape xfsq.
# btrfs-progs: the fallback's tests on a btrfs root, whose subvolumes share
# its mount but number their inodes afresh. chromium: the dashboard's tests
# drive it headless (chromedp). systemd: systemd-analyze verifies contrib/systemd/xfsq.service.
# quota: the kernel tests on ext4 (made with mkfs.ext4 -O quota,project;
# e2fsprogs is in every Debian) check xfsq's figures against repquota -P.
# pgbouncer: a fleet behind PgBouncer in transaction mode (the test starts
# its own, as nobody, on a free port; the package's service is not used).
case "${1:-}" in
test) want=(xfsprogs quota qemu-system-x86 busybox-static git postgresql prometheus btrfs-progs chromium systemd pgbouncer) ;;
demo) want=(xfsprogs qemu-system-x86 busybox-static) ;;
*) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "deps.sh: missing Debian packages: ${missing[*]}; install them with: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
