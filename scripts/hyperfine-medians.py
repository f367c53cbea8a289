#!/usr/bin/env python3
"""Print the medians of a hyperfine --export-json file and the ratio of the
second command to the first: hyperfine-medians.py FILE NAME1 NAME2"""
import json
import statistics
import sys

path, first, second = sys.argv[1:4]
runs = json.load(open(path))["results"]
m = [statistics.median(r["times"]) * 1000 for r in runs]
print(f"medians: {first} {m[0]:.1f} ms, {second} {m[1]:.1f} ms, ratio {m[1] / m[0]:.3f}")
