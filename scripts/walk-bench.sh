#!/usr/bin/env bash
# walk-bench.sh — the inventory benchmarks recorded in docs/benchmarks.md:
# `xfsq snapshot` (depth 3, top 20) against `du -s` on the same warm trees
# of 200,000 and 1,000,000 files, the walker alone against du and
# filepath.WalkDir+Lstat, and peak RSS of a snapshot of 1,000,000 files.
# Each goal of the inventory issue is checked as it is measured (≤ 0.50×
# du's wall time, ≤ 32 MiB peak RSS); the script exits 1 at the end if any
# was missed, after running every benchmark.
#
#   scripts/walk-bench.sh [BENCH_DIR]     default /var/tmp/xfsq-bench (≈10 GB free needed)
#
# Needs hyperfine and GNU time: apt-get install hyperfine time
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-/var/tmp/xfsq-bench}
for c in hyperfine /usr/bin/time du; do
	command -v "$c" >/dev/null || { echo "walk-bench: $c is missing: apt-get install hyperfine time" >&2; exit 1; }
done
bin=$(mktemp -d)/xfsq
scripts/build-xfsq.sh "$bin"
mkdir -p "$B"
"$bin" --root "$B" init >/dev/null
for n in 200k:200000 1m:1000000; do
	name=bench${n%%:*} files=${n##*:}
	if [ ! -d "$B/projects/$name" ]; then
		go run ./scripts/gentree -files "$files" "$B/projects/$name"
	fi
	"$bin" --root "$B" project show "$name" >/dev/null 2>&1 || "$bin" --root "$B" project add "$name" >/dev/null
done
missed=()
# snapshot_vs_du NAME ROUNDS RUNS GOAL TAG [XFSQ_FLAG…]: xfsq snapshot of a
# warm tree against du -s, in ROUNDS hyperfine runs of RUNS each, pooled (see
# hyperfine-medians.py), left in $B/hyperfine-TAG-N.json; a GOAL ("" for
# none) that is missed is noted. $prepare, if set (prepare=CMD
# snapshot_vs_du …), runs before every run of both commands, untimed.
prepare=
snapshot_vs_du() {
	local name=$1 rounds=$2 runs=$3 goal=$4 tag=$5 files=()
	shift 5
	du -s "$B/projects/$name" >/dev/null # warm
	for r in $(seq "$rounds"); do
		hyperfine -N --warmup 1 --runs "$runs" --style none --export-json "$B/hyperfine-$tag-$r.json" \
			${prepare:+--prepare "$prepare"} \
			"du -s $B/projects/$name" \
			"$bin --root $B $* snapshot $name --area workspace --depth 3 --top 20"
		files+=("$B/hyperfine-$tag-$r.json")
	done
	scripts/hyperfine-medians.py "$(IFS=,; echo "${files[*]}")" "du -s" "xfsq snapshot" $goal || missed+=("$name: xfsq snapshot over $goal× du")
}
echo "== xfsq snapshot vs du -s, 200,000 files: 4 rounds of 6 runs each"
snapshot_vs_du bench200k 4 6 0.50 bench200k
# Not a goal: the same with the store on tmpfs, where SQLite's syncs do not
# wait for the disk; what the durable write costs on this machine.
shm=$(mktemp -d /dev/shm/xfsq-walk-bench.XXXXXX)
cp "$B/.xfsq/xfsq.db" "$shm/"
echo "== the same, the store on tmpfs (--db $shm/xfsq.db; a reference, not a goal): 2 rounds of 6 runs"
snapshot_vs_du bench200k 2 6 "" bench200k-store-on-tmpfs --db "$shm/xfsq.db"
rm -rf "$shm"
# Not a goal: the same tree, but a file of it grows before every run, as in
# a project at work. The tree's stored form then changes (its newest mtime
# with it), and the store rewrites it whole; an unchanged tree, above, is
# replaced in place and only its changed pages are written.
grow=$B/projects/bench200k/l1-000/growing.log
echo "== the same, a file of the tree growing before every run (a reference, not a goal): 2 rounds of 6 runs"
prepare="sh -c 'date +%s%N >>$grow'" snapshot_vs_du bench200k 2 6 "" bench200k-changing
rm -f "$grow"
echo "== the walker alone, du -s and filepath.WalkDir+Lstat, same tree (go test -bench)"
XFSQ_BENCH_TREE="$B/projects/bench200k" go test -run '^$' -bench BenchmarkWalk -benchtime 8x -count 5 ./inventory/ | grep '^Benchmark'
echo "== xfsq snapshot vs du -s, 1,000,000 files: 3 rounds of 3 runs each"
snapshot_vs_du bench1m 3 3 0.50 bench1m
echo "== peak RSS, 1,000,000 files"
for i in 1 2 3; do
	read -r rss wall < <(/usr/bin/time -f "%M %e" "$bin" --root "$B" snapshot bench1m --area workspace --depth 3 --top 20 2>&1 >/dev/null | tail -1)
	echo "xfsq snapshot: max RSS $rss KiB, wall $wall s"
	[ "$rss" -le $((32 * 1024)) ] || missed+=("bench1m: peak RSS $rss KiB over 32 MiB")
	/usr/bin/time -f "du -s:          max RSS %M KiB, wall %e s" du -s "$B/projects/bench1m" 2>&1 >/dev/null | tail -1
done
if [ ${#missed[@]} -gt 0 ]; then
	printf 'walk-bench: goal missed: %s\n' "${missed[@]}" >&2
	exit 1
fi
echo "walk-bench: every goal met"
