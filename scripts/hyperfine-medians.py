#!/usr/bin/env python3
"""Print the medians of hyperfine --export-json files and the ratio of the
second command to the first, and hold the ratio to a goal:

    hyperfine-medians.py FILE[,FILE…] NAME1 NAME2 [MAX_RATIO]

Several files are rounds of the same commands: their times are pooled,
and each round's ratio is printed too. Rounds run one after the other
spread the commands over the same minutes, so that the machine's drift
(several percent between minutes on these VMs) does not fall on one
command only, as it does when one command's runs all come first.

Commands after the second (references such as other tools, measured in
the same rounds) get a line each with their median and ratio to the
first, named by their command line; they have no goal. Last, each
command's CPU time (user + system, hyperfine's mean a round, the median
of the rounds) and its ratio to the first's: what a busy machine moves
less than wall time, where other work takes the cores a parallel command
would use.

With MAX_RATIO the line ends in "goal ≤ MAX_RATIO: met" or "NOT met", and a
missed goal exits 1, so a benchmark script fails when its goal breaks."""
import json
import statistics
import sys

if len(sys.argv) not in (4, 5):
    sys.exit(__doc__)
paths, first, second = sys.argv[1].split(","), sys.argv[2], sys.argv[3]
pooled, commands, rounds, cpu = None, None, [], None
for path in paths:
    runs = json.load(open(path))["results"]
    if len(runs) < 2 or (pooled is not None and len(runs) != len(pooled)):
        sys.exit(f"{path}: {len(runs)} commands, want 2 or more, the same in every round")
    if pooled is None:
        pooled, commands, cpu = [[] for _ in runs], [r["command"] for r in runs], [[] for _ in runs]
    for i, r in enumerate(runs):
        pooled[i] += r["times"]
        cpu[i].append(r["user"] + r["system"])
    rounds.append([statistics.median(r["times"]) / statistics.median(runs[0]["times"]) for r in runs])
m = [statistics.median(t) * 1000 for t in pooled]


def of(i):
    line = f"{m[i]:.1f} ms, ratio {m[i] / m[0]:.3f}"
    if len(rounds) > 1:
        line += f" (rounds {', '.join(f'{r[i]:.3f}' for r in rounds)})"
    return line


line = f"medians: {first} {m[0]:.1f} ms, {second} {of(1)}"
status = 0
if len(sys.argv) == 5:
    goal = float(sys.argv[4])
    met = m[1] / m[0] <= goal
    line += f", goal ≤ {goal:.2f}: {'met' if met else 'NOT met'}"
    status = 0 if met else 1
print(line)
for i in range(2, len(m)):
    print(f"  reference {commands[i]}: {of(i)}")
c = [statistics.median(t) * 1000 for t in cpu]
print("  CPU (user+system) a run: " + ", ".join(f"{commands[i]} {c[i]:.0f} ms ({c[i] / c[0]:.3f})" for i in range(len(c))))
sys.exit(status)
