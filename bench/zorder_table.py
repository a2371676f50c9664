"""The z-order benchmark's table and its independent measures (Python deltalake + pyarrow).

  zorder_table.py make PATH FILES ROWS     FILES appends of ROWS rows (a file each): `sensor` one
                                           of 500 values and `ts` over 30 days, both at random
                                           in every file; `value`, `id`
  zorder_table.py peer PATH TARGET         delta-rs's optimize.z_order(["sensor", "ts"]), timed
  zorder_table.py floor PATH OUT TARGET    the floor: pyarrow reads every file, sorts by
                                           (sensor, ts) in memory and writes files of the same
                                           size, no table format, no proof
  zorder_table.py measure PATH             files, the share of files whose log min/max admit
                                           sensor = 's-017', mean overlap depth of sensor and
                                           ts (brute force), rows and the sum of `value`
"""
import json
import os
import random
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake

T0 = 1_764_547_200_000_000  # 2025-12-01 in microseconds
SPAN = 30 * 86_400_000_000


def make(path, files, rows):
    rng = random.Random(42)
    def part(i):
        return pa.table({
            "sensor": pa.array([f"s-{rng.randrange(500):03d}" for _ in range(rows)], pa.string()),
            "ts": pa.array([T0 + rng.randrange(SPAN) for _ in range(rows)], pa.timestamp("us", tz="UTC")),
            "value": pa.array([rng.random() * 100 for _ in range(rows)], pa.float64()),
            "id": pa.array(range(i * rows, (i + 1) * rows), pa.int64()),
        })
    # One file per append, as a stream writes them.
    for i in range(files):
        write_deltalake(path, part(i), mode="append")


def peer(path, target):
    dt = DeltaTable(path)
    t0 = time.perf_counter()
    m = dt.optimize.z_order(["sensor", "ts"], target_size=target)
    secs = time.perf_counter() - t0
    print(json.dumps({"tool": "delta-rs z_order", "seconds": secs,
                      "files_removed": m["numFilesRemoved"], "files_added": m["numFilesAdded"]}), flush=True)
    os._exit(0)


def floor(path, out, target):
    t0 = time.perf_counter()
    files = DeltaTable(path).file_uris()
    t = pa.concat_tables([pq.read_table(f) for f in files])
    t = t.sort_by([("sensor", "ascending"), ("ts", "ascending")])
    per_row = sum(os.path.getsize(f) for f in files) / max(t.num_rows, 1)
    rows = max(int(target / per_row), 1)
    os.makedirs(out, exist_ok=True)
    for i, start in enumerate(range(0, t.num_rows, rows)):
        pq.write_table(t.slice(start, rows), f"{out}/part-{i:05}.parquet", compression="snappy")
    print(json.dumps({"tool": "floor (pyarrow sort, no table format)", "seconds": time.perf_counter() - t0}), flush=True)


def depth(spans):
    """Mean over files of the most files overlapping at a point of the file's range."""
    points = sorted({p for s in spans for p in s})
    at = lambda v: sum(1 for lo, hi in spans if lo <= v <= hi)
    ds = [max(at(p) for p in points if lo <= p <= hi) for lo, hi in spans]
    return sum(ds) / len(ds) if ds else 0.0


def measure(path):
    dt = DeltaTable(path)
    adds = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
    admit = sum(1 for a in adds if a["min.sensor"] is None or a["min.sensor"] <= "s-017" <= a["max.sensor"])
    data = dt.to_pyarrow_table(columns=["value", "id"])
    print(json.dumps({
        "files": len(adds),
        "admit_share": admit / len(adds),
        "sensor_depth": depth([(a["min.sensor"], a["max.sensor"]) for a in adds]),
        "ts_depth": depth([(a["min.ts"], a["max.ts"]) for a in adds]),
        "rows": data.num_rows,
        "distinct_ids": len(pc.unique(data["id"])),
        # Summed in id order: a float sum depends on the order rows are added in.
        "value_sum": pc.sum(pc.take(data["value"], pc.sort_indices(data["id"]))).as_py(),
    }), flush=True)
    os._exit(0)


cmd = sys.argv[1]
if cmd == "make":
    make(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
elif cmd == "peer":
    peer(sys.argv[2], int(sys.argv[3]))
elif cmd == "floor":
    floor(sys.argv[2], sys.argv[3], int(sys.argv[4]))
else:
    measure(sys.argv[2])
