#!/usr/bin/env python3
"""Judge the new code against the old from interleaved rounds (scripts/regress-bench.sh):

    regress-summary.py RESULTS_DIR

RESULTS_DIR holds, per round R (1, 2, …) and side (old, new):
  walker-rR.json           hyperfine --export-json: commands named "du -s", "old", "new"
  BENCH-SIDE-rR.txt        go test -bench output (BENCH: a short name, e.g. check1000)

For each benchmark and metric, each round gives one figure per side: the
median of that round's runs. The ratio is the median over rounds of
new/old of the same round (the two sides ran minutes apart at most, in an
order that alternates from round to round, so a drift of the machine's load
falls on both). The noise band is what the same code gives against itself:
the widest ratio between the old code's figures of two adjacent rounds
(either way round), and at least 1.05. A ratio over the band is a
regression beyond noise; a judged one makes the exit status 1.

The first run of scrape1000/scrape in each process holds that process's
first, cold scrape (every tree read, the caches filled); it is a row of its
own, and scrape1000/scrape is the warm runs after it.

Judged metrics: wall time (hyperfine's median, ns/op), and CPU time where it
is measured (hyperfine's user+system, the metrics benchmark's cpu-ms/op).
B/op, allocs/op, p99 and an answer's body bytes (body-B/op) are printed, not
judged.

The cached overview is judged per byte served: its ns/op over the bytes of
the answer's body in the same run (ns/B), since the two codes answer
different overviews (the new one's project lines carry more). The body's
bytes are the benchmark's body-B/op where it reports them, else the size
its set-up logs ("overview body: N bytes", printed with -test.v), which is
how the code before body-B/op says it. The raw ns/op row stays, shown and
not judged. Rows marked "A/A" run the
same code on both sides (the overview benchmark's ceiling, du): they show
what the method calls noise and are not judged."""
import glob
import json
import os
import re
import statistics
import sys

FLOOR = 1.05
JUDGED = {"wall", "cpu", "ns/op", "cpu-ms/op", "ns/B"}
# Metrics where less is better; every one here is.
UNITS = {"wall": "ms", "cpu": "ms", "ns/op": "ns", "cpu-ms/op": "ms", "B/op": "B", "allocs/op": "", "p99-ms": "ms",
         "body-B/op": "B", "ns/B": "ns/B"}
# Sub-benchmarks that run identical code in both trees.
AA = {"overview1000/ceiling", "walker/du -s"}
# Rows shown but not judged, with why: the like-for-like row judges them.
UNJUDGED = {("overview1000/cached", "ns/op"): "judged per byte served, below"}
# The cached overview per byte served: (its ns/op, in a row of this name).
PER_BYTE = ("overview1000/cached", "overview1000/cached, per byte served")

if len(sys.argv) != 2:
    sys.exit(__doc__)
res = sys.argv[1]
# data[(bench, metric)][side][round] = [values]
data = {}


def add(bench, metric, side, rnd, v):
    data.setdefault((bench, metric), {"old": {}, "new": {}}).setdefault(side, {}).setdefault(rnd, []).append(v)


for path in sorted(glob.glob(os.path.join(res, "walker-r*.json"))):
    rnd = int(re.search(r"-r(\d+)\.json$", path).group(1))
    for r in json.load(open(path))["results"]:
        name = r["command"]
        cpu = (r["user"] + r["system"]) * 1000
        if name == "du -s":  # the reference: one command for both sides, so only its band means anything
            add("walker/du -s", "wall", "old", rnd, statistics.median(r["times"]) * 1000)
            add("walker/du -s", "cpu", "old", rnd, cpu)
            continue
        add("walker/snapshot", "wall", name, rnd, statistics.median(r["times"]) * 1000)
        add("walker/snapshot", "cpu", name, rnd, cpu)

line_re = re.compile(r"^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+(.*)$")
logged_body_re = re.compile(r"overview body: (\d+) bytes")
for path in sorted(glob.glob(os.path.join(res, "*-*-r*.txt"))):
    m = re.match(r"(.+)-(old|new)-r(\d+)\.txt$", os.path.basename(path))
    if not m:
        continue
    short, side, rnd = m.group(1), m.group(2), int(m.group(3))
    seen = set()
    logged_body = []  # the set-up's "overview body: N bytes" (-test.v)
    for line in open(path):
        bm = logged_body_re.search(line)
        if bm:
            logged_body.append(float(bm.group(1)))
        lm = line_re.match(line.strip())
        if not lm:
            continue
        name = lm.group(1).split("/", 1)
        bench = short + ("/" + name[1] if len(name) > 1 else "")
        if bench == "scrape1000/scrape" and bench not in seen:
            # A process's first scrape reads every tree (its caches are
            # empty): that sample is judged apart from the warm ones.
            seen.add(bench)
            bench = "scrape1000/scrape, a process's first run (one cold scrape in it)"
        fields = lm.group(2).split()
        for v, unit in zip(fields[0::2], fields[1::2]):
            if unit in UNITS:
                add(bench, unit, side, rnd, float(v))
    # The cached overview per byte served: each run's ns/op over the body
    # this process served (body-B/op, else the size its set-up logged).
    bench, per_byte = PER_BYTE
    if not bench.startswith(short + "/"):
        continue
    times = data.get((bench, "ns/op"), {}).get(side, {}).get(rnd)
    body = data.get((bench, "body-B/op"), {}).get(side, {}).get(rnd)
    if times and not body and logged_body:
        for v in logged_body:
            add(bench, "body-B/op", side, rnd, v)
        body = logged_body
    if times and body and statistics.median(body) > 0:
        for t in times:
            add(per_byte, "ns/B", side, rnd, t / statistics.median(body))


# Without the body's size on both sides of a round (an old run without
# -test.v, say) there is no per-byte figure for it: the raw ns/op is then
# judged, as before, rather than the cached overview going unjudged.
notes = []
raw, per = data.get((PER_BYTE[0], "ns/op")), data.get((PER_BYTE[1], "ns/B"))
if raw:
    raw_rounds = set(raw["old"]) & set(raw["new"])
    per_rounds = set(per["old"]) & set(per["new"]) if per else set()
    if raw_rounds and not raw_rounds <= per_rounds:
        UNJUDGED.pop((PER_BYTE[0], "ns/op"), None)
        data.pop((PER_BYTE[1], "ns/B"), None)
        notes.append(f"{PER_BYTE[0]}: no body size in every round (rounds {sorted(raw_rounds - per_rounds)}), "
                     "so its raw ns/op is judged, not its time per byte served")


def fmt(v, unit):
    if unit == "ns":
        for div, u in ((1e6, "ms"), (1e3, "µs")):
            if v >= div:
                return f"{v / div:.3g} {u}"
        return f"{v:.3g} ns"
    if unit == "B":
        return f"{v / 1024:.1f} KiB" if v >= 1024 else f"{v:.0f} B"
    if unit == "":
        return f"{v:.0f}"
    return f"{v:,.0f} {unit}" if v >= 100 else f"{v:.3g} {unit}"


rows, failed = [], []
for (bench, metric), sides in sorted(data.items()):
    rounds = sorted(set(sides["old"]) & set(sides["new"])) if sides["new"] else sorted(sides["old"])
    if not rounds:
        continue
    unit = UNITS[metric]
    if not sides["new"]:  # a reference both sides share (du): its median and its own spread
        old = [statistics.median(sides["old"][r]) for r in rounds]
        aa = [max(b / a, a / b) for a, b in zip(old, old[1:]) if a > 0 and b > 0]
        rows.append(f"| {bench} | {metric} | {fmt(statistics.median(old), unit)} | (the same runs) | — | "
                    f"±{(max(aa or [1]) - 1) * 100:.0f} % | reference: its own spread between adjacent rounds |")
        continue
    old = [statistics.median(sides["old"][r]) for r in rounds]
    new = [statistics.median(sides["new"][r]) for r in rounds]
    ratios = [n / o for n, o in zip(new, old) if o > 0]
    ratio = statistics.median(ratios)
    aa = [max(b / a, a / b) for a, b in zip(old, old[1:]) if a > 0 and b > 0]
    band = max([FLOOR] + aa)
    pooled_old = statistics.median([v for r in rounds for v in sides["old"][r]])
    pooled_new = statistics.median([v for r in rounds for v in sides["new"][r]])
    judged = metric in JUDGED and bench not in AA and (bench, metric) not in UNJUDGED
    if not aa:
        verdict = "no band (one round)"
    elif ratio > band:
        verdict = "SLOWER beyond noise" if metric in JUDGED else "more beyond noise"
    elif ratio < 1 / band:
        verdict = "faster beyond noise" if metric in JUDGED else "less beyond noise"
    else:
        verdict = "within noise"
    if bench in AA:
        verdict += " (A/A: same code)"
    elif (bench, metric) in UNJUDGED:
        verdict += f" (not judged: {UNJUDGED[(bench, metric)]})"
    elif not judged:
        verdict += " (not judged)"
    elif ratio > band:
        failed.append(f"{bench} {metric}")
    rows.append(f"| {bench} | {metric} | {fmt(pooled_old, unit)} | {fmt(pooled_new, unit)} | **{ratio:.3f}** "
                f"({', '.join(f'{r:.2f}' for r in ratios)}) | ±{(band - 1) * 100:.0f} % | {verdict} |")

print("| benchmark | metric | old median | new median | new/old: median of rounds (each round) | noise band (old vs old) | verdict |")
print("|---|---|---|---|---|---|---|")
print("\n".join(rows))
for n in notes:
    print(f"\nnote: {n}")
# The walker's usual figure: the snapshot's wall time over du's, each round's.
du = data.get(("walker/du -s", "wall"), {}).get("old", {})
snap = data.get(("walker/snapshot", "wall"))
if du and snap:
    over = {side: statistics.median(statistics.median(snap[side][r]) / statistics.median(du[r]) for r in du if r in snap[side])
            for side in ("old", "new")}
    print(f"\nxfsq snapshot ÷ du -s, wall, median of rounds: old {over['old']:.2f}×, new {over['new']:.2f}×")
if failed:
    print(f"\nregression beyond noise: {'; '.join(failed)}")
    sys.exit(1)
print("\nno judged metric is over its noise band")
