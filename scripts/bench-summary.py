#!/usr/bin/env python3
"""Print the median and the median absolute deviation (MAD) of every criterion
benchmark measured so far (target/criterion/**/new/estimates.json), or of
those whose id contains one of the words given: the figures BENCHMARKS.md
records. Usage: python3 scripts/bench-summary.py [FILTER ...]"""
import json
import pathlib
import sys

root = pathlib.Path(__file__).resolve().parent.parent / "target" / "criterion"
words = sys.argv[1:]


def human(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


rows = []
for path in sorted(root.glob("**/new/estimates.json")):
    bench_id = str(path.parent.parent.relative_to(root))
    if words and not any(w in bench_id for w in words):
        continue
    est = json.loads(path.read_text())
    median = est["median"]["point_estimate"]
    mad = est["median_abs_dev"]["point_estimate"]
    rows.append((bench_id, median, mad))

width = max((len(r[0]) for r in rows), default=0)
for bench_id, median, mad in rows:
    print(f"{bench_id:<{width}}  median {human(median):>10}  MAD {human(mad):>10} ({100 * mad / median:.1f} %)")
