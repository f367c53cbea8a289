#!/usr/bin/env bash
# walk-bench.sh — the inventory benchmarks recorded in BENCHMARKS.md:
# `xfsq snapshot` (depth 3, top 20) against `du -s` on the same warm trees
# of 200,000 and 1,000,000 files, the walker alone against du and
# filepath.WalkDir+Lstat, and peak RSS of a snapshot of 1,000,000 files.
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
CGO_ENABLED=0 go build -o "$bin" ./cmd/xfsq
mkdir -p "$B"
"$bin" --root "$B" init >/dev/null
for n in 200k:200000 1m:1000000; do
	name=bench${n%%:*} files=${n##*:}
	if [ ! -d "$B/projects/$name" ]; then
		go run ./scripts/gentree -files "$files" "$B/projects/$name"
	fi
	"$bin" --root "$B" project show "$name" >/dev/null 2>&1 || "$bin" --root "$B" project add "$name" >/dev/null
done
du -s "$B/projects/bench200k" >/dev/null # warm
echo "== xfsq snapshot vs du -s, 200,000 files (medians and ratio below)"
hyperfine -N --warmup 2 --runs 20 --export-json "$B/hyperfine-200k.json" \
	"du -s $B/projects/bench200k" \
	"$bin --root $B snapshot bench200k --area workspace --depth 3 --top 20"
python3 - "$B/hyperfine-200k.json" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1]))["results"]
m = [statistics.median(x["times"]) * 1000 for x in r]
print(f"medians: du -s {m[0]:.1f} ms, xfsq snapshot {m[1]:.1f} ms, ratio {m[1]/m[0]:.3f}")
PY
echo "== the walker alone, du -s and filepath.WalkDir+Lstat, same tree (go test -bench)"
XFSQ_BENCH_TREE="$B/projects/bench200k" go test -run '^$' -bench BenchmarkWalk -benchtime 8x -count 5 ./inventory/ | grep '^Benchmark'
echo "== xfsq snapshot vs du -s, 1,000,000 files"
du -s "$B/projects/bench1m" >/dev/null
hyperfine -N --warmup 1 --runs 7 --export-json "$B/hyperfine-1m.json" \
	"du -s $B/projects/bench1m" \
	"$bin --root $B snapshot bench1m --area workspace --depth 3 --top 20"
python3 - "$B/hyperfine-1m.json" <<'PY2'
import json, statistics, sys
r = json.load(open(sys.argv[1]))["results"]
m = [statistics.median(x["times"]) * 1000 for x in r]
print(f"medians: du -s {m[0]:.1f} ms, xfsq snapshot {m[1]:.1f} ms, ratio {m[1]/m[0]:.3f}")
PY2
echo "== peak RSS, 1,000,000 files"
for i in 1 2 3; do
	/usr/bin/time -f "xfsq snapshot: max RSS %M KiB, wall %e s" "$bin" --root "$B" snapshot bench1m --area workspace --depth 3 --top 20 2>&1 >/dev/null | tail -1
	/usr/bin/time -f "du -s:          max RSS %M KiB, wall %e s" du -s "$B/projects/bench1m" 2>&1 >/dev/null | tail -1
done
