#!/usr/bin/env bash
# regress-bench.sh — issue #34's acceptance point: the walker, admission,
# overview and scrape benchmarks of the code before the restructuring
# (b2495bd: the `project` package) and of this checkout (the `sandbox`
# facade and its core), measured in the same run, interleaved round by
# round, then judged against the noise the old code shows against itself
# (scripts/regress-summary.py says how). Exits 1 if a judged new/old ratio
# is over its noise band, after printing the whole table.
#
#   scripts/regress-bench.sh [ROUNDS]     default 2, at least 2 (the band needs two rounds)
#
# ROUNDS is for the two benchmarks that build a root of 1,000 projects in
# each process, a minute or two on a loaded machine (check1000, overview);
# the cheaper ones get more: the walker 2×ROUNDS rounds, the ledger
# benchmark ROUNDS+1, the scrape (whose roots are made once) 4×ROUNDS.
#
# XFSQ_REGRESS_OLD      the old commit (default b2495bd)
# XFSQ_REGRESS_DIR      kept between runs (default /var/tmp/xfsq-regress): a root of its own
#                       holding the walker's 200,000-file tree (scripts/gentree, ~2 GB, made
#                       once), the new code's store and the old code's (.xfsq-old.db), and
#                       results/STAMP with every raw output. A root of its own, because
#                       each code's store refuses a root whose trees another store knows.
# XFSQ_REGRESS_ONLY     a comma list of walker,admission,overview,scrape (default all)
#
# Each benchmark is found by its function's name in each tree (the packages
# moved: project → sandbox), built there with `go test -c`, and run from its
# package's directory as `go test` would. Per round, the old and the new
# binary run one after the other, the order alternating (old first in odd
# rounds), so a load that drifts during the run falls on both. About 20
# minutes on 2 cores loaded to a load average of 12–15, at 2 rounds; the old
# tree is checked out at the same path every run, so that its build is cached.
# Needs go, git, hyperfine, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
[[ $rounds =~ ^[0-9]+$ && $rounds -ge 2 ]] || { echo "regress-bench: ROUNDS must be a number ≥ 2, not $rounds" >&2; exit 2; }
old_commit=${XFSQ_REGRESS_OLD:-b2495bd}
D=${XFSQ_REGRESS_DIR:-/var/tmp/xfsq-regress}
only=,${XFSQ_REGRESS_ONLY:-walker,admission,overview,scrape},
for c in go git hyperfine python3; do
	command -v "$c" >/dev/null || { echo "regress-bench: $c is missing (apt-get install hyperfine python3)" >&2; exit 2; }
done
git cat-file -e "$old_commit^{commit}" 2>/dev/null || { echo "regress-bench: commit $old_commit is not in this clone: git fetch --unshallow" >&2; exit 2; }
want() { [[ $only == *,$1,* ]]; }

new_src=$PWD
oldsrc=${D%/}.src-old # the old tree, at one path every run: its build is then cached
tmp=$(mktemp -d /var/tmp/xfsq-regress-bench.XXXXXX)
res=$D/results/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$res" "$tmp/bin"
sampler=
cleanup() {
	[ -n "$sampler" ] && kill "$sampler" 2>/dev/null
	git -C "$new_src" worktree remove --force "$oldsrc" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# The machine and its load, sampled all run long.
{
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "old: $(git log -1 --format='%h %s' "$old_commit")"
	echo "new: $(git log -1 --format='%h %s' HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')"
	echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); kernel $(uname -r); $(go version | cut -d' ' -f3)"
} | tee "$res/machine.txt"
(while :; do echo "$(date -u +%H:%M:%S) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 10; done) >"$res/load.txt" &
sampler=$!
phase() { echo "== $1 ($(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$res/phases.txt"; }

# pkg_of TREE FUNC: the package directory (./x/y) of the test file defining FUNC.
pkg_of() {
	local f
	f=$(cd "$1" && grep -rl --include='*_test.go' "^func $2(" . | head -1)
	[ -n "$f" ] || { echo "regress-bench: no func $2 in $1" >&2; exit 2; }
	dirname "$f"
}

phase "build: $old_commit in a worktree, and this checkout"
git worktree remove --force "$oldsrc" 2>/dev/null || rm -rf "$oldsrc"
git worktree prune
git worktree add -q --detach "$oldsrc" "$old_commit"
declare -A src=([old]=$oldsrc [new]=$new_src) pkgdir=()
# short name → benchmark function
declare -A fn=([check1000]=BenchmarkCheck1000 [reserve]=BenchmarkReserveBesideALongLedger
	[overview1000]=BenchmarkOverview1000 [scrape1000]=BenchmarkScrape1000Fallback)
benches=()
want admission && benches+=(check1000 reserve)
want overview && benches+=(overview1000)
want scrape && benches+=(scrape1000)
for side in old new; do
	if want walker; then (cd "${src[$side]}" && scripts/build-xfsq.sh "$tmp/bin/xfsq-$side"); fi
	for b in "${benches[@]}"; do
		p=$(pkg_of "${src[$side]}" "${fn[$b]}")
		pkgdir[$b-$side]=${src[$side]}/$p
		echo "$side: ${fn[$b]} in $p" | tee -a "$res/machine.txt"
		(cd "${src[$side]}" && go test -c -o "$tmp/bin/$b-$side.test" "$p")
	done
done

# gobench NAME SIDE ROUND ARGS…: one run of a test binary, from its package's directory.
gobench() {
	local b=$1 side=$2 r=$3
	shift 3
	(cd "${pkgdir[$b-$side]}" && "$tmp/bin/$b-$side.test" -test.run '^$' -test.benchmem -test.timeout 20m "$@") >"$res/$b-$side-r$r.txt" 2>&1 ||
		{ echo "regress-bench: $b ($side, round $r) failed:" >&2; tail -20 "$res/$b-$side-r$r.txt" >&2; exit 1; }
	grep -E '^Benchmark\S*\s+[0-9]' "$res/$b-$side-r$r.txt" | sed "s/^/  $side r$r  /"
}
# interleave NAME N ARGS…: N rounds of the old and the new binary, the order alternating.
interleave() {
	local b=$1 n=$2 r
	shift 2
	for r in $(seq "$n"); do
		if ((r % 2)); then
			gobench "$b" old "$r" "$@" && gobench "$b" new "$r" "$@"
		else
			gobench "$b" new "$r" "$@" && gobench "$b" old "$r" "$@"
		fi
	done
}

if want walker; then
	phase "walker: xfsq snapshot of a warm 200,000-file tree, and du -s, $((2 * rounds)) rounds of 3 runs"
	tree=$D/projects/bench200k olddb=$D/.xfsq-old.db
	if [ ! -d "$tree" ]; then
		mkdir -p "$D"
		"$tmp/bin/xfsq-new" --root "$D" init >/dev/null
		"$tmp/bin/xfsq-old" --root "$D" --db "$olddb" init >/dev/null
		go run ./scripts/gentree -files 200000 "$tree"
	fi
	"$tmp/bin/xfsq-new" --root "$D" project show bench200k >/dev/null 2>&1 || "$tmp/bin/xfsq-new" --root "$D" project add bench200k >/dev/null
	"$tmp/bin/xfsq-old" --root "$D" --db "$olddb" project show bench200k >/dev/null 2>&1 || "$tmp/bin/xfsq-old" --root "$D" --db "$olddb" project add bench200k >/dev/null
	snap_old="$tmp/bin/xfsq-old --root $D --db $olddb snapshot bench200k --area workspace --depth 3 --top 20"
	snap_new="$tmp/bin/xfsq-new --root $D snapshot bench200k --area workspace --depth 3 --top 20"
	du -s "$tree" >/dev/null # warm
	for r in $(seq $((2 * rounds))); do
		order=(-n old "$snap_old" -n new "$snap_new")
		((r % 2)) || order=(-n new "$snap_new" -n old "$snap_old")
		hyperfine -N --warmup 1 --runs 3 --style none --export-json "$res/walker-r$r.json" -n "du -s" "du -s $tree" "${order[@]}" >>"$res/hyperfine.log" 2>&1
		python3 - "$res/walker-r$r.json" "$r" <<-'EOF'
			import json, statistics, sys
			runs = json.load(open(sys.argv[1]))["results"]
			print(f"  round {sys.argv[2]}: " + ", ".join(f"{x['command']} {statistics.median(x['times']) * 1000:.0f} ms" for x in runs))
		EOF
	done
fi

if want admission; then
	phase "admission: BenchmarkCheck1000 (3000x, 4 a round), $rounds rounds"
	interleave check1000 "$rounds" -test.bench 'BenchmarkCheck1000$' -test.benchtime 3000x -test.count 4
	# 100,000 rows, not 1,000,000: inserting a million takes ~20 s a run
	# here, and 100,000 already cost 20× a write before the kept sum.
	phase "admission: BenchmarkReserveBesideALongLedger, 0 and 100,000 rows (200x, 3 a round), $((rounds + 1)) rounds"
	interleave reserve $((rounds + 1)) -test.bench 'BenchmarkReserveBesideALongLedger/ledger=(0|100000)$' -test.benchtime 200x -test.count 3
fi

if want overview; then
	phase "overview: BenchmarkOverview1000 (3000x, 3 a round), $rounds rounds"
	# -test.v: the set-up's log says the answer's size, which the old code
	# reports no metric of (regress-summary.py's per byte served row).
	interleave overview1000 "$rounds" -test.bench 'BenchmarkOverview1000$' -test.benchtime 3000x -test.count 3 -test.v
fi

if want scrape; then
	phase "scrape: BenchmarkScrape1000Fallback (20x, 3 a round), $((4 * rounds)) rounds, each side's root of 1,000 projects made first"
	# Each side's root made once (its store's schema is its own), outside the rounds.
	for side in old new; do
		mkdir -p "$tmp/scrape-$side"
		export XFSQ_BENCH_FALLBACK_ROOT=$tmp/scrape-$side
		gobench scrape1000 "$side" 0 -test.bench 'BenchmarkScrape1000Fallback/usage$' -test.benchtime 1x >/dev/null
	done
	rm -f "$res"/scrape1000-*-r0.txt
	# A round costs seconds here (no set-up): four times the rounds.
	for r in $(seq $((4 * rounds))); do
		for side in $( ((r % 2)) && echo old new || echo new old); do
			export XFSQ_BENCH_FALLBACK_ROOT=$tmp/scrape-$side
			gobench scrape1000 "$side" "$r" \
				-test.bench 'BenchmarkScrape1000Fallback$' -test.benchtime 20x -test.count 3
		done
	done
fi

phase "done"
kill "$sampler" 2>/dev/null
sampler=
echo "load average (1 min) during the run: $(awk '{print $2}' "$res/load.txt" | sort -n | awk '{a[NR]=$1} END {printf "min %s, median %s, max %s (%d samples)", a[1], a[int((NR+1)/2)], a[NR], NR}')" | tee -a "$res/machine.txt"
if command -v benchstat >/dev/null; then
	for b in "${benches[@]}"; do
		cat "$res/$b"-old-r*.txt >"$tmp/$b-old.txt"
		cat "$res/$b"-new-r*.txt >"$tmp/$b-new.txt"
		(cd "$tmp" && benchstat "$b-old.txt" "$b-new.txt") >>"$res/benchstat.txt" 2>&1 || true
	done
	echo "benchstat (all rounds pooled, not paired): $res/benchstat.txt"
fi
echo "raw results: $res"
scripts/regress-summary.py "$res" | tee "$res/summary.md"
