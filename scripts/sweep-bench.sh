#!/usr/bin/env bash
# sweep-bench.sh — docs/benchmarks.md's sweep benchmark: `xfsq sweep` deleting a
# 100,000-file cache entry (walk, plan, re-check, journal, delete) against
# `rm -rf` of an identical copy, in the same hyperfine run; it exits 1 if
# the goal (at most 1.25× rm -rf) is missed.
#
#   scripts/sweep-bench.sh [BENCH_DIR]    default /var/tmp/xfsq-sweep-bench
#
# Needs: apt-get install hyperfine
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-/var/tmp/xfsq-sweep-bench}
command -v hyperfine >/dev/null || { echo "sweep-bench: apt-get install hyperfine" >&2; exit 1; }
bin=$(mktemp -d)/xfsq
scripts/build-xfsq.sh "$bin"
mkdir -p "$B"
[ -d "$B/template" ] || go run ./scripts/gentree -files 100000 "$B/template"
"$bin" --root "$B/root" init >/dev/null 2>&1 || { mkdir -p "$B/root" && "$bin" --root "$B/root" init >/dev/null; }
"$bin" --root "$B/root" project show bench >/dev/null 2>&1 || "$bin" --root "$B/root" project add bench >/dev/null
# Everything in the copy is fresh: let the policy take it anyway.
for kv in cache_quota_per_project=1k cache_min_age=0s busy_grace=0s; do
	"$bin" --root "$B/root" settings set "${kv%%=*}" "${kv#*=}" --allow-zero >/dev/null
done
hyperfine -N --runs 7 --export-json "$B/hyperfine.json" \
	--prepare "sh -c 'rm -rf $B/root/cache/bench/entry $B/rmcopy; cp -a $B/template $B/root/cache/bench/entry; cp -a $B/template $B/rmcopy; sync'" \
	"rm -rf $B/rmcopy" \
	"$bin --root $B/root sweep bench --area cache"
scripts/hyperfine-medians.py "$B/hyperfine.json" "rm -rf" "xfsq sweep" 1.25
