#!/usr/bin/env python3
"""Print the medians of hyperfine --export-json files and the ratio of the
second command to the first, and hold the ratio to a goal:

    hyperfine-medians.py FILE[,FILE…] NAME1 NAME2 [MAX_RATIO]

Several files are rounds of the same two commands: their times are pooled,
and each round's ratio is printed too. Rounds run one after the other
spread both commands over the same minutes, so that the machine's drift
(several percent between minutes on these VMs) does not fall on one
command only, as it does when one command's runs all come first.

With MAX_RATIO the line ends in "goal ≤ MAX_RATIO: met" or "NOT met", and a
missed goal exits 1, so a benchmark script fails when its goal breaks."""
import json
import statistics
import sys

if len(sys.argv) not in (4, 5):
    sys.exit(__doc__)
paths, first, second = sys.argv[1].split(","), sys.argv[2], sys.argv[3]
pooled = [[], []]
rounds = []
for path in paths:
    runs = json.load(open(path))["results"]
    if len(runs) != 2:
        sys.exit(f"{path}: {len(runs)} commands, want 2")
    for i in (0, 1):
        pooled[i] += runs[i]["times"]
    rounds.append(statistics.median(runs[1]["times"]) / statistics.median(runs[0]["times"]))
m = [statistics.median(t) * 1000 for t in pooled]
ratio = m[1] / m[0]
line = f"medians: {first} {m[0]:.1f} ms, {second} {m[1]:.1f} ms, ratio {ratio:.3f}"
if len(rounds) > 1:
    line += f" (rounds {', '.join(f'{r:.3f}' for r in rounds)})"
if len(sys.argv) == 5:
    goal = float(sys.argv[4])
    met = ratio <= goal
    line += f", goal ≤ {goal:.2f}: {'met' if met else 'NOT met'}"
    print(line)
    sys.exit(0 if met else 1)
print(line)
