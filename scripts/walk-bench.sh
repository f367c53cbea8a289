#!/usr/bin/env bash
# walk-bench.sh — the inventory benchmarks recorded in docs/benchmarks.md:
# `xfsq snapshot` (depth 3, top 20) against `du -s` on the same warm trees
# of 200,000 and 1,000,000 files, with the walker of 2026-11-30 (401eb2e,
# built from a worktree, its own store), gdu and ncdu in the same hyperfine
# rounds; each snapshot's total checked against du's (du-exact); and peak
# RSS of a snapshot of 1,000,000 and of 3,000,000 files. Each goal of
# issue 38 is checked as it is measured (≤ 0.50× du's wall time; peak RSS
# flat from 1M to 3M files: within 10 %, and ≤ 32 MiB); the script exits 1
# at the end if any was missed, after running every benchmark.
#
#   scripts/walk-bench.sh [BENCH_DIR]     default /var/tmp/xfsq-bench (≈15 GB free needed)
#
# Needs hyperfine, GNU time, gdu and ncdu: apt-get install hyperfine time gdu ncdu
# (a missing gdu or ncdu is said and left out; the rest are required).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-/var/tmp/xfsq-bench}
old_commit=401eb2e # the walker of 2026-11-30, before the hostile-tenant defences
for c in hyperfine /usr/bin/time du git python3; do
	command -v "$c" >/dev/null || { echo "walk-bench: $c is missing: apt-get install hyperfine time" >&2; exit 1; }
done
for c in gdu ncdu; do
	command -v "$c" >/dev/null || echo "walk-bench: $c is missing (apt-get install $c): measured without it" >&2
done
tmp=$(mktemp -d)
bin=$tmp/xfsq old=$tmp/xfsq-20261130
scripts/build-xfsq.sh "$bin"
git cat-file -e "$old_commit^{commit}" 2>/dev/null || { echo "walk-bench: commit $old_commit (the 2026-11-30 walker) is not in this clone: git fetch --unshallow" >&2; exit 1; }
git worktree add -q --detach "$tmp/old-src" "$old_commit"
(cd "$tmp/old-src" && scripts/build-xfsq.sh "$old")
git worktree remove --force "$tmp/old-src"
olddb=$B/.xfsq-20261130.db # the old code's own store: its schema is older
mkdir -p "$B"
"$bin" --root "$B" init >/dev/null
"$old" --root "$B" --db "$olddb" init >/dev/null
for n in 200k:200000 1m:1000000 3m:3000000; do
	name=bench${n%%:*} files=${n##*:} sparse=
	[ "$name" = bench3m ] && sparse=-sparse # only counted for memory: holes, made in minutes
	if [ ! -d "$B/projects/$name" ]; then
		go run ./scripts/gentree $sparse -files "$files" "$B/projects/$name"
	fi
	"$bin" --root "$B" project show "$name" >/dev/null 2>&1 || "$bin" --root "$B" project add "$name" >/dev/null
	"$old" --root "$B" --db "$olddb" project show "$name" >/dev/null 2>&1 || "$old" --root "$B" --db "$olddb" project add "$name" >/dev/null
done
missed=()
snap() { echo "$bin --root $B snapshot $1 --area workspace --depth 3 --top 20"; }
# du_exact NAME: the snapshot's bytes and inodes are du's.
du_exact() {
	local got want
	got=$($(snap "$1") --json | python3 -c 'import json,sys; s=json.load(sys.stdin)[0]; print(s["size_bytes"], s["total_files"]+s["total_dirs"])')
	want="$(du -s --block-size=1 "$B/projects/$1" | cut -f1) $(du -s --inodes "$B/projects/$1" | cut -f1)"
	if [ "$got" = "$want" ]; then
		echo "du-exact: $1: $got (bytes, inodes) as du"
	else
		echo "du-exact: $1: xfsq $got, du $want: NOT exact"
		missed+=("$1: snapshot $got, du $want")
	fi
}
# snapshot_vs_du NAME ROUNDS RUNS GOAL: xfsq snapshot of a warm tree
# against du -s, the 2026-11-30 walker, gdu and ncdu, in ROUNDS hyperfine
# runs of RUNS each, pooled (see hyperfine-medians.py), left in
# $B/hyperfine-NAME-N.json; a missed GOAL is noted.
snapshot_vs_du() {
	local name=$1 rounds=$2 runs=$3 goal=$4 files=() cmds
	local dir=$B/projects/$name
	cmds=(-n "du -s" "du -s $dir" -n "xfsq snapshot" "$(snap "$name")"
		-n "xfsq snapshot, walker of 2026-11-30" "$old --root $B --db $olddb snapshot $name --area workspace --depth 3 --top 20")
	command -v gdu >/dev/null && cmds+=(-n "gdu -s" "gdu -n -p -c -s $dir")
	command -v ncdu >/dev/null && cmds+=(-n "ncdu -o /dev/null" "ncdu -0 -x -o /dev/null $dir")
	du -s "$dir" >/dev/null # warm
	for r in $(seq "$rounds"); do
		hyperfine -N --warmup 1 --runs "$runs" --style none --export-json "$B/hyperfine-$name-$r.json" "${cmds[@]}" >/dev/null
		files+=("$B/hyperfine-$name-$r.json")
	done
	scripts/hyperfine-medians.py "$(IFS=,; echo "${files[*]}")" "du -s" "xfsq snapshot" "$goal" || missed+=("$name: xfsq snapshot over $goal× du")
}
echo "== du-exact"
du_exact bench200k
du_exact bench1m
echo "== xfsq snapshot vs du -s, 200,000 files: 4 rounds of 6 runs each"
snapshot_vs_du bench200k 4 6 0.50
echo "== xfsq snapshot vs du -s, 1,000,000 files: 3 rounds of 3 runs each"
snapshot_vs_du bench1m 3 3 0.50
# peak_rss NAME: the median of three snapshots' peak RSS, in KiB.
peak_rss() {
	local rss=()
	for i in 1 2 3; do
		read -r kib wall < <(/usr/bin/time -f "%M %e" $(snap "$1") 2>&1 >/dev/null | tail -1)
		echo "xfsq snapshot $1: max RSS $kib KiB, wall $wall s" >&2
		rss+=("$kib")
	done
	printf '%s\n' "${rss[@]}" | sort -n | sed -n 2p
}
echo "== peak RSS, 1,000,000 and 3,000,000 files (the 3M tree's files are holes: only their count matters here)"
rss1=$(peak_rss bench1m)
rss3=$(peak_rss bench3m)
/usr/bin/time -f "du -s bench1m: max RSS %M KiB, wall %e s" du -s "$B/projects/bench1m" 2>&1 >/dev/null | tail -1
echo "peak RSS medians: 1M $rss1 KiB, 3M $rss3 KiB ($(python3 -c "print(f'{$rss3/$rss1:.3f}')")×)"
[ "$rss3" -le $((rss1 * 11 / 10)) ] || missed+=("peak RSS 3M $rss3 KiB over 1.1× 1M's $rss1 KiB: not flat")
[ "$rss3" -le $((32 * 1024)) ] || missed+=("bench3m: peak RSS $rss3 KiB over 32 MiB")
rm -rf "$tmp"
if [ ${#missed[@]} -gt 0 ]; then
	printf 'walk-bench: goal missed: %s\n' "${missed[@]}" >&2
	exit 1
fi
echo "walk-bench: every goal met"
