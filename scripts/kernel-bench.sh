#!/usr/bin/env bash
# kernel-bench.sh — run the XFS quota benchmarks inside the user-mode Linux
# test kernel (or natively, where the host kernel enforces XFS quotas) and
# print their results; BENCHMARKS.md records them.
#
#   scripts/kernel-bench.sh [COUNT]     COUNT runs of the usage benchmark (default 5);
#                                       the slow assign benchmark runs (COUNT+1)/2 times
#
# Needs: apt-get install xfsprogs user-mode-linux
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
CGO_ENABLED=0 go test -c -o "$out/xfs.test" ./quota/xfs
args=(-test.run '^$' -test.count "$count" -test.benchmem=false)
if [ -e /proc/fs/xfs/xqm ] && [ "$(id -u)" = 0 ]; then
	run=("$out/xfs.test")
else
	CGO_ENABLED=0 go build -o "$out/umlrun" ./internal/kerneltest/umlrun
	run=("$out/umlrun" -mem 1G -timeout 60m "$out/xfs.test")
fi
# Reading usage is fast: many iterations per run. Assigning is slow: one.
"${run[@]}" "${args[@]}" -test.bench 'KernelUsage' -test.benchtime 50x
"${run[@]}" -test.run '^$' -test.count "$(( (count + 1) / 2 ))" -test.bench 'KernelAssignLimit' -test.benchtime 1x
