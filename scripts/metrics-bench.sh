#!/usr/bin/env bash
# metrics-bench.sh — the scrape of 1,000 projects on real XFS with project
# quotas and on the fallback, in ONE boot of the test kernel (or natively,
# where the host kernel enforces XFS quotas): BenchmarkKernelScrape1000 of
# ./metrics. Prints the route, the host's load, the medians of wall time
# and CPU per scrape, and the XFS/fallback ratios of that boot;
# docs/benchmarks.md ("Metrics scrape") records them.
#
#   scripts/metrics-bench.sh [COUNT]    COUNT runs of each sub-benchmark (default 5), 10 scrapes each
#
# No goal is checked here: the scrape's goal (<= 10 ms) is the fallback's
# on the host itself (go test ./metrics -bench BenchmarkScrape1000Fallback);
# inside an emulated kernel only the ratios mean something.
# Needs: apt-get install xfsprogs qemu-system-x86 busybox-static
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
CGO_ENABLED=0 go test -c -o "$out/metrics.test" ./metrics
echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
echo "host load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
# The fallback root of 1,000 projects is made on the host (a minute or
# two; under emulation it takes the best part of an hour) by the fallback
# benchmark itself, which also gives the host's own figure for the goal.
# Inside, it is unpacked into the guest's memory at the same path: a
# fallback root is known by its path, and it must not be read over the
# host's shared filesystem.
fb="$out/fallback-root"
mkdir "$fb"
echo "host: the fallback benchmark (making the fallback root)"
XFSQ_BENCH_FALLBACK_ROOT="$fb" "$out/metrics.test" -test.run '^$' -test.count "$count" -test.benchmem=false \
	-test.bench '^BenchmarkScrape1000Fallback$' -test.benchtime 10x | tee "$out/host-result"
# One file to read over the shared filesystem: copying its 5,000 entries
# one by one took 5 minutes under emulation.
tar -C "$fb" -cf "$out/fallback-root.tar" .
cat >"$out/bench.sh" <<INNER
#!/bin/sh
set -e
if [ "\$XFSQ_KERNELTEST_INSIDE" = 1 ]; then
	mount -t tmpfs tmpfs "$fb"
	tar -C "$fb" -xpf "$out/fallback-root.tar"
fi
rc=0
XFSQ_BENCH_FALLBACK_ROOT="$fb" "$out/metrics.test" -test.run '^\$' -test.count "$count" -test.benchmem=false -test.bench '^BenchmarkKernelScrape1000\$' -test.benchtime 10x || rc=\$?
if [ "\$XFSQ_KERNELTEST_INSIDE" = 1 ]; then umount "$fb"; fi
exit \$rc
INNER
chmod +x "$out/bench.sh"
echo "host load average before the boot: $(cut -d' ' -f1-3 /proc/loadavg)"
. scripts/kernel-route.sh
run_in_kernel "$out/bench.sh" "$out/result"
echo "host load average after: $(cut -d' ' -f1-3 /proc/loadavg) ($(($(date +%s) - start)) s)"

# Per sub-benchmark the median of each unit over the runs, then the ratios
# of this boot.
awk '
function med(list,    a, c, i, j, t) {
	c = split(substr(list, 2), a, " ")
	for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return (c % 2) ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2
}
/^Benchmark(KernelScrape1000|Scrape1000Fallback)\// {
	name = $1; sub(/^BenchmarkKernelScrape1000\//, "", name); sub(/^BenchmarkScrape1000Fallback\//, "host-fallback/", name); sub(/-[0-9]+$/, "", name)
	if (!(name in seen)) { seen[name] = 1; order[++n] = name }
	runs[name]++
	for (i = 3; i < NF; i += 2) v[name, $(i + 1)] = v[name, $(i + 1)] " " $i
}
END {
	if (n == 0) { print "no benchmark results"; exit 1 }
	for (k = 1; k <= n; k++) {
		s = order[k]
		if (s == "paired") continue
		printf "median %-28s %9.2f ms wall  %9.2f ms CPU  (%d runs)\n", s, med(v[s, "ns/op"]) / 1e6, med(v[s, "cpu-ms/op"]), runs[s]
	}
	x = "xfs/scrape"; f = "fallback/scrape"
	printf "XFS scrape / fallback scrape, from the medians: %.2fx wall, %.2fx CPU\n", med(v[x, "ns/op"]) / med(v[f, "ns/op"]), med(v[x, "cpu-ms/op"]) / med(v[f, "cpu-ms/op"])
	printf "XFS scrape / fallback scrape, adjacent pairs:   %.2fx wall, %.2fx CPU (median over runs of the median of pairs)\n", med(v["paired", "xfs/fallback"]), med(v["paired", "xfs/fallback-cpu"])
	printf "Usage alone / scrape: XFS %.2f, fallback %.2f (CPU)\n", med(v["xfs/usage", "cpu-ms/op"]) / med(v[x, "cpu-ms/op"]), med(v["fallback/usage", "cpu-ms/op"]) / med(v[f, "cpu-ms/op"])
	printf "(host-fallback: the fallback benchmark on the host before the boot, for its goal <= 10 ms a scrape)\n"
}' "$out/host-result" "$out/result"
grep -h 'set-up:' "$out/result" | sed 's/^ *//' || true
