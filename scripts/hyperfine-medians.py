#!/usr/bin/env python3
"""Print the medians of a hyperfine --export-json file and the ratio of the
second command to the first, and hold the ratio to a goal:

    hyperfine-medians.py FILE NAME1 NAME2 [MAX_RATIO]

With MAX_RATIO the line ends in "goal ≤ MAX_RATIO: met" or "NOT met", and a
missed goal exits 1, so a benchmark script fails when its goal breaks."""
import json
import statistics
import sys

if len(sys.argv) not in (4, 5):
    sys.exit(__doc__)
path, first, second = sys.argv[1:4]
runs = json.load(open(path))["results"]
m = [statistics.median(r["times"]) * 1000 for r in runs]
ratio = m[1] / m[0]
line = f"medians: {first} {m[0]:.1f} ms, {second} {m[1]:.1f} ms, ratio {ratio:.3f}"
if len(sys.argv) == 5:
    goal = float(sys.argv[4])
    met = ratio <= goal
    line += f", goal ≤ {goal:.2f}: {'met' if met else 'NOT met'}"
    print(line)
    sys.exit(0 if met else 1)
print(line)
