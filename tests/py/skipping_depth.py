"""The independent side of the skipping tests: makes a table of known layout with Python
deltalake, and measures overlap depth from Python deltalake's own reading of the statistics
(`get_add_actions(flatten=True)`), by brute force (every file against every other), so a bug
in lakehealth's sweep cannot agree with itself.

  skipping_depth.py make URI         30 appends of 100 rows, partitioned by `day` (2 values):
                                     `seq` rises across appends (tiles), `sensor` is random among
                                     50 values, `note` is null except in the last append
  skipping_depth.py measure URI COL...   one JSON object: per column (and per partition)
                                     files, worst, mean, point_files, all_null, without_stats
  skipping_depth.py admits URI COL VALUE  {"files": n, "admitting": k, "paths": [...]}: the files whose
                                     min/max admit COL = VALUE (an integer when it parses as
                                     one); a file without both counts as admitting
"""
import json
import random
import sys

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake


def make(uri):
    rng = random.Random(17)
    for i in range(30):
        n = 100
        write_deltalake(uri, pa.table({
            "seq": pa.array(range(i * n, i * n + n), pa.int64()),
            "sensor": pa.array([f"s-{rng.randrange(50):02d}" for _ in range(n)], pa.string()),
            "note": pa.array([f"n{j}" if i == 29 else None for j in range(n)], pa.string()),
            "day": pa.array(["2026-12-0%d" % (1 + i % 2)] * n, pa.string()),
        }), mode="append", partition_by=["day"])


def depth(rows, col):
    """rows: dicts of one file's flattened add action."""
    spans, unknown, all_null = [], 0, 0
    for r in rows:
        lo, hi = r.get(f"min.{col}"), r.get(f"max.{col}")
        if lo is not None and hi is not None:
            spans.append((lo, hi))
        elif r.get(f"null_count.{col}") is not None and r[f"null_count.{col}"] == r["num_records"]:
            all_null += 1
        else:
            unknown += 1
    at = lambda v: unknown + sum(1 for lo, hi in spans if lo <= v <= hi)
    points = sorted({p for s in spans for p in s})
    deepest = max((at(p) for p in points), default=unknown)
    depths = [max(at(p) for p in points if lo <= p <= hi) for lo, hi in spans] + [deepest] * unknown
    lookups = [at(lo) for lo, _ in spans] + [deepest] * unknown
    mean = lambda xs: sum(xs) / len(xs) if xs else 0.0
    return {"files": len(rows), "worst": max(depths, default=0), "mean": mean(depths),
            "point_files": mean(lookups), "all_null": all_null, "without_stats": unknown}


def measure(uri, cols):
    adds = pa.table(DeltaTable(uri).get_add_actions(flatten=True)).to_pylist()
    out = {"table": {c: depth(adds, c) for c in cols}, "partitions": {}}
    for day in sorted({a["partition.day"] for a in adds}):
        rows = [a for a in adds if a["partition.day"] == day]
        out["partitions"][day] = {c: depth(rows, c) for c in cols}
    print(json.dumps(out))


def admits(uri, col, value):
    try:
        value = int(value)
    except ValueError:
        pass
    adds = pa.table(DeltaTable(uri).get_add_actions(flatten=True)).to_pylist()
    hit = [a["path"] for a in adds
           if a.get(f"min.{col}") is None or a.get(f"max.{col}") is None
           or a[f"min.{col}"] <= value <= a[f"max.{col}"]]
    print(json.dumps({"files": len(adds), "admitting": len(hit), "paths": hit}))


if sys.argv[1] == "make":
    make(sys.argv[2])
elif sys.argv[1] == "admits":
    admits(sys.argv[2], sys.argv[3], sys.argv[4])
else:
    measure(sys.argv[2], sys.argv[3:])
